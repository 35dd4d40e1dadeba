import { removeBridge } from '../support/netns';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__KLEA_TEST_CLUSTER__?.stop();
  if (globalThis.__KLEA_TEST_BRIDGE__) removeBridge(globalThis.__KLEA_TEST_BRIDGE__);
}
