/**
 * The payload-encryption key setting (`temporal.payload_key`, env `KLEA_PAYLOAD_KEY`): one or more AES-256 keys,
 * comma-separated, each `<keyId>:<base64 of 32 bytes>` (`openssl rand -base64 32`). The first key encrypts; every
 * listed key decrypts, so a key is rotated by putting a new one first and keeping the old ones after it until no
 * history still needs them. A lone key may leave out its id; it is then `default`.
 *
 * Pure (the config schema checks the setting with it): the key bytes are decoded by runtime/payload-codec.ts.
 * Messages never quote a key, since they end up in logs.
 */

export interface PayloadKeySpec {
  /** Stored beside every payload it encrypts, so a decoder knows which key to use. */
  id: string;
  /** Standard base64 of the 32 key bytes. */
  base64: string;
}

export const DEFAULT_PAYLOAD_KEY_ID = 'default';
const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** 32 bytes in standard base64: 43 characters and one `=`. */
const KEY_32_BYTES = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export const PAYLOAD_KEY_FORMAT = '<keyId>:<base64 of 32 bytes> (make one with: openssl rand -base64 32)';

/** The keys in the setting, the encrypting one first; or what is wrong with it, naming the entry but not the key. */
export function parsePayloadKeys(setting: string): { keys: PayloadKeySpec[] } | { problem: string } {
  const entries = setting.split(',').map((e) => e.trim());
  const keys: PayloadKeySpec[] = [];
  for (const [i, entry] of entries.entries()) {
    const which = entries.length > 1 ? `key ${i + 1} of ${entries.length}` : 'the key';
    if (!entry) return { problem: `${which} is empty; expected ${PAYLOAD_KEY_FORMAT}, comma-separated` };
    const colon = entry.indexOf(':');
    if (colon < 0 && entries.length > 1)
      return { problem: `${which} has no key id; with several keys each is ${PAYLOAD_KEY_FORMAT}` };
    const id = colon < 0 ? DEFAULT_PAYLOAD_KEY_ID : entry.slice(0, colon);
    const base64 = colon < 0 ? entry : entry.slice(colon + 1);
    if (!KEY_ID.test(id))
      return { problem: `${which}: the key id "${id.slice(0, 64)}" must be 1-64 letters, digits, ".", "_" or "-"` };
    if (!KEY_32_BYTES.test(base64))
      return { problem: `${which} (id "${id}") is not 32 bytes in base64; expected ${PAYLOAD_KEY_FORMAT}` };
    if (keys.some((k) => k.id === id)) return { problem: `the key id "${id}" is listed twice` };
    keys.push({ id, base64 });
  }
  return { keys };
}
