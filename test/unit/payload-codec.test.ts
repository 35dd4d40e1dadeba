/** The payload codec (runtime/payload-codec.ts) and its key setting (common/payload-keys.ts). */
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { resolveConfig } from '../../common/config-resolve';
import { parsePayloadKeys } from '../../common/payload-keys';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  PayloadKeyError,
  payloadCodecFor,
} from '../../runtime/payload-codec';

const key = () => randomBytes(32);
const json = (value: unknown): Payload => ({
  metadata: { encoding: Buffer.from('json/plain') },
  data: Buffer.from(JSON.stringify(value)),
});
const text = (b: Uint8Array | null | undefined) => Buffer.from(b ?? []).toString('utf8');

async function errorOf(p: Promise<unknown>): Promise<PayloadKeyError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof PayloadKeyError) return err;
    throw err;
  }
  throw new Error('expected a PayloadKeyError');
}

describe('AES-256-GCM payload codec', () => {
  it('round trip: metadata and data come back as they were; the sealed form hides them', async () => {
    const codec = new AesGcmPayloadCodec([{ id: 'k1', key: key() }]);
    const original = [json({ prompt: 'the secret plan' }), { metadata: {}, data: new Uint8Array() }];
    const sealed = await codec.encode(original);
    expect(sealed).toHaveLength(2);
    for (const p of sealed) {
      expect(text(p.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
      expect(text(p.metadata![KEY_ID_METADATA])).toBe('k1');
      expect(text(p.data)).not.toContain('secret');
      expect(text(p.data)).not.toContain('json/plain');
      // nonce (12) + ciphertext + tag (16)
      expect(p.data!.length).toBeGreaterThanOrEqual(28);
    }
    // A fresh nonce each time: the same payload never seals to the same bytes.
    expect(Buffer.from((await codec.encode([original[0]]))[0].data!)).not.toEqual(Buffer.from(sealed[0].data!));

    const opened = await codec.decode(sealed);
    expect(text(opened[0].metadata!.encoding)).toBe('json/plain');
    expect(JSON.parse(text(opened[0].data))).toEqual({ prompt: 'the secret plan' });
    expect(text(opened[1].data)).toBe('');
  });

  it('passes payloads that are not encrypted through decode unchanged (history from before the key)', async () => {
    const codec = new AesGcmPayloadCodec([{ id: 'k1', key: key() }]);
    const plain = json({ a: 1 });
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('tampered data: a clear error naming the key id, never garbage', async () => {
    const codec = new AesGcmPayloadCodec([{ id: 'k1', key: key() }]);
    const [sealed] = await codec.encode([json('hello')]);
    const data = Buffer.from(sealed.data!);
    data[20] ^= 1;
    const err = await errorOf(codec.decode([{ ...sealed, data }]));
    expect(err.keyId).toBe('k1');
    expect(err.message).toMatch(/key id "k1" does not decrypt .*the key is wrong .* or the payload was altered/);

    const short = await errorOf(codec.decode([{ ...sealed, data: data.subarray(0, 10) }]));
    expect(short.message).toMatch(/key id "k1"/);
  });

  it('the same key id with another key: says the key is wrong', async () => {
    const writer = new AesGcmPayloadCodec([{ id: 'k1', key: key() }]);
    const reader = new AesGcmPayloadCodec([{ id: 'k1', key: key() }]);
    const err = await errorOf(reader.decode(await writer.encode([json('x')])));
    expect(err.message).toMatch(
      /key id "k1" .*the key is wrong \(not the one it was encrypted with; check KLEA_PAYLOAD_KEY/
    );
  });

  it('an unknown key id: a clear error naming it and the ids this process has', async () => {
    const writer = new AesGcmPayloadCodec([{ id: 'k-old', key: key() }]);
    const reader = new AesGcmPayloadCodec([{ id: 'k-new', key: key() }]);
    const err = await errorOf(reader.decode(await writer.encode([json('x')])));
    expect(err.keyId).toBe('k-old');
    expect(err.message).toBe(
      'a payload is encrypted with key id "k-old", which this process does not have: its payload key is missing ' +
        'or wrong (KLEA_PAYLOAD_KEY or temporal.payload_key lists "k-new")'
    );
    const noId = await errorOf(
      reader.decode([{ metadata: { encoding: Buffer.from(ENCRYPTED_ENCODING) }, data: key() }])
    );
    expect(noId.message).toMatch(/names no key id/);
  });

  it('rotation: the first key encrypts, the old one still decrypts what it sealed', async () => {
    const oldKey = key();
    const before = new AesGcmPayloadCodec([{ id: 'k1', key: oldKey }]);
    const sealedBefore = await before.encode([json('written before the rotation')]);

    const after = new AesGcmPayloadCodec([
      { id: 'k2', key: key() },
      { id: 'k1', key: oldKey },
    ]);
    expect(after.currentKeyId).toBe('k2');
    const sealedAfter = await after.encode([json('written after')]);
    expect(text(sealedAfter[0].metadata![KEY_ID_METADATA])).toBe('k2');
    expect(JSON.parse(text((await after.decode(sealedBefore))[0].data))).toBe('written before the rotation');
    expect(JSON.parse(text((await after.decode(sealedAfter))[0].data))).toBe('written after');
    // A process that still has only the old key cannot read the new payloads, and says which key it lacks.
    expect((await errorOf(before.decode(sealedAfter))).message).toMatch(
      /key id "k2", which this process does not have/
    );
  });
});

describe('the payload key setting', () => {
  const b64 = () => key().toString('base64');

  it('is off by default; KLEA_PAYLOAD_KEY turns it on', () => {
    expect(resolveConfig({}, {}).temporal.payload_key).toBeNull();
    expect(payloadCodecFor(resolveConfig({}, {}))).toBeNull();
    const k = b64();
    const config = resolveConfig({}, { KLEA_PAYLOAD_KEY: `k1:${k}` });
    expect(config.temporal.payload_key).toBe(`k1:${k}`);
    expect(payloadCodecFor(config)!.currentKeyId).toBe('k1');
  });

  it('takes a lone key without an id (id "default") and several keys, the first one current', () => {
    const [a, b] = [b64(), b64()];
    expect(parsePayloadKeys(a)).toEqual({ keys: [{ id: 'default', base64: a }] });
    expect(parsePayloadKeys(`new:${a}, old:${b}`)).toEqual({
      keys: [
        { id: 'new', base64: a },
        { id: 'old', base64: b },
      ],
    });
    expect(payloadCodecFor(resolveConfig({ temporal: { payload_key: `new:${a},old:${b}` } }, {}))!.currentKeyId).toBe(
      'new'
    );
  });

  it('refuses bad settings naming the entry, never quoting the key', () => {
    const short = randomBytes(16).toString('base64');
    const cases: Array<[string, RegExp]> = [
      [`k1:${short}`, /the key \(id "k1"\) is not 32 bytes in base64/],
      [`k1:${b64()},${b64()}`, /key 2 of 2 has no key id/],
      [`k1:${b64()},k1:${b64()}`, /the key id "k1" is listed twice/],
      [`bad id:${b64()}`, /the key id "bad id" must be 1-64 letters/],
      [`k1:${b64()},`, /key 2 of 2 is empty/],
    ];
    for (const [setting, message] of cases) {
      let error = '';
      try {
        resolveConfig({}, { KLEA_PAYLOAD_KEY: setting });
      } catch (err) {
        error = (err as Error).message;
      }
      expect(error).toMatch(/^environment: KLEA_PAYLOAD_KEY: /);
      expect(error).toMatch(message);
      for (const part of setting.split(/[,:]/)) if (part.length > 20) expect(error).not.toContain(part);
    }
    expect(() => resolveConfig({ temporal: { payload_key: short } }, {})).toThrow(
      /^klea\.yaml: temporal\.payload_key: the key \(id "default"\) is not 32 bytes/
    );
  });
});
