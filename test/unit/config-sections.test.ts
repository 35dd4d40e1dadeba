import { namedSections, sectionsLine } from '../../activities/llm/config-sections';

describe('the sections of a configuration file that a request names', () => {
  const ini = '[web]\nhost = 0.0.0.0\nport = 80\n\n[mail] ; outgoing\nhost = localhost\n\n[cache]\nttl = 300\n';

  it('a section whose name stands in the request as a word, in any case and any language around it', () => {
    expect(namedSections('settings.ini', ini, 'Our Mail relay moved: host relay.corp, port 2525.')).toEqual(['mail']);
    expect(namedSections('conf/app.cfg', ini, 'Le serveur mail a changé : port 2525.')).toEqual(['mail']);
    expect(namedSections('settings.ini', ini, 'Set the cache ttl to 60 and the web port to 8080.')).toEqual([
      'web',
      'cache',
    ]);
    expect(sectionsLine('settings.ini', ini, 'The mail host is relay.corp now.')).toEqual([
      'The request names the section [mail] of settings.ini.',
    ]);
    expect(sectionsLine('settings.ini', ini, 'Point web and mail at 10.0.0.1.')).toEqual([
      'The request names the sections [web], [mail] of settings.ini.',
    ]);
  });

  it('TOML tables with dots, by their whole name', () => {
    const toml = '[project]\nversion = "1.0"\n\n[tool.ruff]\nline-length = 100\n';
    expect(namedSections('pyproject.toml', toml, 'Set tool.ruff line-length to 88.')).toEqual(['tool.ruff']);
    // "pyproject" holds "project", not as a word of its own.
    expect(namedSections('pyproject.toml', toml, 'Bump the version in pyproject.toml.')).toEqual([]);
  });

  it('the control: no section named, every section named, one section only, or a file of another kind', () => {
    expect(namedSections('settings.ini', ini, 'Point it at host relay.corp, port 2525.')).toEqual([]);
    expect(namedSections('settings.ini', ini, 'Drop web, mail and cache.')).toEqual([]);
    expect(namedSections('setup.cfg', '[metadata]\nversion = 1.0\n', 'Set the metadata version to 1.1.')).toEqual([]);
    expect(namedSections('notes.md', ini, 'The mail host moved.')).toEqual([]);
    expect(sectionsLine('settings.ini', null, 'The mail host moved.')).toEqual([]);
    // Part of a longer word is no name.
    expect(namedSections('settings.ini', ini, 'The mailer and webhooks moved.')).toEqual([]);
  });
});
