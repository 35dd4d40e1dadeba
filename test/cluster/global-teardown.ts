export default async function globalTeardown(): Promise<void> {
  await globalThis.__KLEA_TEST_CLUSTER__?.stop();
}
