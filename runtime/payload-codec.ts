/**
 * Payload encryption, Temporal's way: a `PayloadCodec` that the API's client and the worker both use, so every
 * workflow input and result, signal, update, query answer and activity input and output is stored in Temporal's
 * history as AES-256-GCM ciphertext. The API's codec-server routes (api/codec.ts) use the same codec to show
 * them to people again (Temporal UI, `temporal ... --codec-endpoint`).
 *
 * An encrypted payload is the whole original payload (metadata and data, serialized as a protobuf `Payload`)
 * sealed with the current key: metadata `encoding: binary/encrypted` and `encryption-key-id: <id>`, data =
 * nonce (12 bytes) + ciphertext + tag (16 bytes). Payloads without that encoding pass through decode unchanged,
 * so history written before encryption was turned on still reads.
 *
 * A payload this process cannot open throws a PayloadKeyError naming the key id, never yields garbage: in the
 * worker that fails the workflow task (retried until a worker with the right key takes it), in the API it is
 * the request's error.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Config } from '../common/config';
import { parsePayloadKeys } from '../common/payload-keys';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata key Temporal's own encryption samples use for the key id. */
export const KEY_ID_METADATA = 'encryption-key-id';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const WHERE_KEYS_ARE_SET = 'KLEA_PAYLOAD_KEY or temporal.payload_key';

/** A payload that cannot be decrypted here: its key is missing or wrong, or the payload was altered. */
export class PayloadKeyError extends Error {
  override readonly name = 'PayloadKeyError';
  constructor(
    message: string,
    /** The key id the payload names (null when it names none). */
    readonly keyId: string | null
  ) {
    super(message);
  }
}

export interface PayloadKey {
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

const utf8 = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : '');

export class AesGcmPayloadCodec implements PayloadCodec {
  private readonly byId: Map<string, Buffer>;
  private readonly current: PayloadKey;

  /** `keys[0]` encrypts; every key decrypts what was encrypted with it. */
  constructor(keys: readonly PayloadKey[]) {
    if (keys.length === 0) throw new Error('the payload codec needs at least one key');
    for (const { id, key } of keys)
      if (key.length !== 32) throw new Error(`payload key "${id}" is ${key.length} bytes; AES-256 needs 32`);
    this.current = keys[0];
    this.byId = new Map(keys.map(({ id, key }) => [id, key]));
  }

  /** The id of the key that encrypts. */
  get currentKeyId(): string {
    return this.current.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.seal(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => (utf8(p.metadata?.encoding) === ENCRYPTED_ENCODING ? this.open(p) : p));
  }

  private seal(payload: Payload): Payload {
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, nonce);
    const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: {
        encoding: Buffer.from(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: Buffer.from(this.current.id),
      },
      data: sealed,
    };
  }

  private open(payload: Payload): Payload {
    const keyId = payload.metadata?.[KEY_ID_METADATA] ? utf8(payload.metadata[KEY_ID_METADATA]) : null;
    if (keyId === null)
      throw new PayloadKeyError(`an encrypted payload names no key id (metadata "${KEY_ID_METADATA}")`, null);
    const key = this.byId.get(keyId);
    if (!key) {
      throw new PayloadKeyError(
        `a payload is encrypted with key id "${keyId}", which this process does not have: its payload key is ` +
          `missing or wrong (${WHERE_KEYS_ARE_SET} lists ${[...this.byId.keys()].map((k) => `"${k}"`).join(', ')})`,
        keyId
      );
    }
    const data = Buffer.from(payload.data ?? []);
    const wrongKey =
      `a payload encrypted with key id "${keyId}" does not decrypt with this process's key "${keyId}": ` +
      `the key is wrong (not the one it was encrypted with; check ${WHERE_KEYS_ARE_SET}) or the payload was altered`;
    if (data.length < NONCE_BYTES + TAG_BYTES) throw new PayloadKeyError(wrongKey, keyId);
    const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, NONCE_BYTES));
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new PayloadKeyError(wrongKey, keyId);
    }
    return temporal.api.common.v1.Payload.decode(plain);
  }
}

/** The codec of the configured keys, or null when payload encryption is off. */
export function payloadCodecFor(config: Config): AesGcmPayloadCodec | null {
  const setting = config.temporal.payload_key;
  if (setting === null) return null;
  const parsed = parsePayloadKeys(setting);
  // The config schema has checked the setting already; this only guards a Config built by hand.
  if ('problem' in parsed) throw new Error(`temporal.payload_key: ${parsed.problem}`);
  return new AesGcmPayloadCodec(parsed.keys.map(({ id, base64 }) => ({ id, key: Buffer.from(base64, 'base64') })));
}

/** The data converter of the API's client and the worker: the payload codec when a key is set, else the default. */
export function dataConverterFor(config: Config): DataConverter | undefined {
  const codec = payloadCodecFor(config);
  return codec ? { payloadCodecs: [codec] } : undefined;
}
