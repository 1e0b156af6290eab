/** A secret as stored: the value only sealed, under the key `keyId` names. */
export interface SecretRecord {
  id: string;
  accountId: string;
  name: string;
  sealedValue: string;
  keyId: string;
  createTimeMs: number;
  updateTimeMs: number;
}

/** What the API shows of a secret: never its value. */
export type Secret = Pick<SecretRecord, 'id' | 'name' | 'createTimeMs' | 'updateTimeMs'>;

/** A devbox's environment variable that takes a secret's value. */
export interface SecretBinding {
  envName: string;
  secretId: string;
  /** What the create named it by (name or id), for its messages. */
  ref?: string;
}
