import { isolateTemporal, uiHostServed } from '../../runtime/temporal-isolation';

describe("make start's Temporal in a network namespace of its own (runtime/temporal-isolation)", () => {
  const UI = 'http://127.0.0.1:8233';

  it.each(['127.0.0.1:8233', 'localhost:8233', 'LOCALHOST', '[::1]:8233', '127.0.0.2:8233'])(
    'the UI front serves the loopback name %s',
    (host) => {
      expect(uiHostServed(host, UI)).toBe(true);
    }
  );

  it.each([
    'rebind.evil.example:8233',
    '127.0.0.1.evil.example:8233',
    '127.example.com',
    '0.0.0.0:8233',
    '',
    undefined,
  ])('attack: DNS rebinding; the UI front refuses the Host %s', (host) => {
    expect(uiHostServed(host, UI)).toBe(false);
  });

  it('serves the host temporal.ui_url names as well', () => {
    expect(uiHostServed('temporal.internal:8233', 'http://temporal.internal:8233')).toBe(true);
    expect(uiHostServed('other.internal:8233', 'http://temporal.internal:8233')).toBe(false);
  });

  it('runs the dev server under bubblewrap with a network of its own, forwarding only gRPC and the UI', async () => {
    const iso = isolateTemporal({
      bwrap: '/usr/bin/bwrap',
      port: 7233,
      uiPort: 8233,
      uiUrl: UI,
      node: '/usr/bin/node',
    });
    try {
      const { file, args } = iso.wrap('/opt/temporal', ['server', 'start-dev', '--port', '7233']);
      expect(file).toBe('/usr/bin/bwrap');
      expect(args.slice(0, args.indexOf('--'))).toEqual([
        '--unshare-net',
        '--bind',
        '/',
        '/',
        '--dev-bind',
        '/dev',
        '/dev',
      ]);
      const forwards = args.filter((_, i) => args[i - 1] === '--forward');
      expect(forwards.map((f) => f.replace(/^.*\//, ''))).toEqual(['grpc.sock=7233', 'ui.sock=8233']);
      expect(args.slice(args.lastIndexOf('--') + 1)).toEqual([
        '/opt/temporal',
        'server',
        'start-dev',
        '--port',
        '7233',
      ]);
    } finally {
      await iso.close();
    }
  });
});
