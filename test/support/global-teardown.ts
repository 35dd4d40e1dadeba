export default async function globalTeardown(): Promise<void> {
  await globalThis.__KLEA_DEV_SERVER__?.stop();
}
