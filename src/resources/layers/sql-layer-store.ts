import type { SqlExecutor } from '../../platform/store/sql/executor.js';

/** A layer's row in layer_blobs (schema.ts). */
export interface LayerBlob {
  layerId: string;
  /** The node that has the layer and uploads it. */
  node: string;
  state: 'pending' | 'stored';
  sizeBytes: number | null;
  sha256: string | null;
}

interface Row {
  layer_id: string;
  node: string;
  state: 'pending' | 'stored';
  size_bytes: number | string | null;
  sha256: string | null;
}

const toBlob = (r: Row): LayerBlob => ({
  layerId: r.layer_id,
  node: r.node,
  state: r.state,
  sizeBytes: r.size_bytes === null ? null : Number(r.size_bytes),
  sha256: r.sha256,
});

/** Which layers are in the blob store, and which each node fetched from it. */
export class SqlLayerStore {
  constructor(private readonly db: SqlExecutor) {}

  async get(layerId: string): Promise<LayerBlob | undefined> {
    const { rows } = await this.db.query<Row>('SELECT layer_id, node, state, size_bytes, sha256 FROM layer_blobs WHERE layer_id = ?', [layerId]);
    return rows[0] && toBlob(rows[0]);
  }

  /** Records that `node` uploads the layer; false when some node does or did already. */
  async claim(layerId: string, node: string): Promise<boolean> {
    const r = await this.db.query(
      "INSERT INTO layer_blobs (layer_id, node, state, create_time_ms) VALUES (?, ?, 'pending', ?) ON CONFLICT (layer_id) DO NOTHING",
      [layerId, node, Date.now()],
    );
    return r.rowCount > 0;
  }

  /** pending → stored; false when the row is gone (the layer was collected while it uploaded). */
  async stored(layerId: string, sizeBytes: number, sha256: string): Promise<boolean> {
    const r = await this.db.query("UPDATE layer_blobs SET state = 'stored', size_bytes = ?, sha256 = ? WHERE layer_id = ?", [sizeBytes, sha256, layerId]);
    return r.rowCount > 0;
  }

  async forget(layerId: string): Promise<void> {
    await this.db.query('DELETE FROM layer_blobs WHERE layer_id = ?', [layerId]);
  }

  /** Layers whose rows were made before `beforeMs`. */
  async listIds(beforeMs: number): Promise<string[]> {
    const { rows } = await this.db.query<{ layer_id: string }>('SELECT layer_id FROM layer_blobs WHERE create_time_ms < ?', [beforeMs]);
    return rows.map((r) => r.layer_id);
  }

  async addCopy(layerId: string, node: string): Promise<void> {
    await this.db.query('INSERT INTO layer_copies (layer_id, node, create_time_ms) VALUES (?, ?, ?) ON CONFLICT (node, layer_id) DO NOTHING', [
      layerId,
      node,
      Date.now(),
    ]);
  }

  async copies(node: string): Promise<string[]> {
    const { rows } = await this.db.query<{ layer_id: string }>('SELECT layer_id FROM layer_copies WHERE node = ?', [node]);
    return rows.map((r) => r.layer_id);
  }

  async dropCopy(layerId: string, node: string): Promise<void> {
    await this.db.query('DELETE FROM layer_copies WHERE node = ? AND layer_id = ?', [node, layerId]);
  }
}
