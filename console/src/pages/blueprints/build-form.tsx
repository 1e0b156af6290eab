// The build form's fields and the body they make (POST /v1/blueprints). Only what is filled in is sent, so
// the server's defaults hold: without a Dockerfile it builds FROM the default image.
import type { BlueprintCreateParams } from '@runloop/api-client/resources/blueprints';
import { keyValues, lines, text } from '../../ui/form-values';

const SIZES = ['X_SMALL', 'SMALL', 'MEDIUM', 'LARGE', 'X_LARGE', 'XX_LARGE'];

export function blueprintBody(form: FormData): BlueprintCreateParams {
  const base = text(form, 'base');
  const size = text(form, 'size');
  const commands = lines(text(form, 'system_setup_commands'));
  const metadata = keyValues(text(form, 'metadata'), 'Metadata');
  return {
    name: text(form, 'name') ?? '',
    dockerfile: text(form, 'dockerfile'),
    system_setup_commands: commands.length ? commands : undefined,
    // A base is named by id (bpt_…) or by name (the newest built one of that name).
    ...(base ? (base.startsWith('bpt_') ? { base_blueprint_id: base } : { base_blueprint_name: base }) : {}),
    network_policy_id: text(form, 'network_policy_id'),
    launch_parameters: size ? { resource_size_request: size as never } : undefined,
    metadata: Object.keys(metadata).length ? metadata : undefined,
  };
}

export function BlueprintFields() {
  return (
    <>
      <label>
        Name
        <input name="name" required autocomplete="off" placeholder="python-tools" />
      </label>
      <label>
        Dockerfile
        <textarea name="dockerfile" rows={7} class="mono" placeholder={'FROM runloop:runloop/starter-x86_64\nRUN apt-get update && apt-get install -y jq'} />
        <small>
          Optional. FROM the default image (<code>runloop:…</code>), another blueprint, or a registry image; RUN, COPY, ENV, WORKDIR, USER and the other common
          instructions.
        </small>
      </label>
      <label>
        Setup commands
        <textarea name="system_setup_commands" rows={3} class="mono" placeholder="pip install requests" />
        <small>One shell command per line, run after the Dockerfile.</small>
      </label>
      <label>
        Base blueprint
        <input name="base" autocomplete="off" placeholder="Id or name (optional)" />
        <small>Replaces the Dockerfile's FROM.</small>
      </label>
      <label>
        Size of the build and its devboxes
        <select name="size">
          <option value="">Default</option>
          {SIZES.map((s) => (
            <option key={s} value={s}>
              {s.toLowerCase().replace('_', '-')}
            </option>
          ))}
        </select>
      </label>
      <label>
        Network policy id
        <input name="network_policy_id" autocomplete="off" placeholder="np_… (optional: what the build's steps reach)" />
      </label>
      <label>
        Metadata
        <textarea name="metadata" rows={2} placeholder="team=infra" />
        <small>One KEY=value per line.</small>
      </label>
    </>
  );
}
