/** The project's listing as the prompts use it: whole lines within its bound, its files, and whether it has them all. */
import { deepestListing, mayListDeeper, projectListing } from '../../activities/project/listing';

const listed = ['app.py', 'calc.py', 'config.json', 'src/', 'src/shapes.py', 'test_calc.py'].join('\n');

describe('the project listing', () => {
  it('shows list_dir as it is, and lists every file when nothing was cut', () => {
    const l = projectListing(listed);
    expect(l.text).toBe(listed);
    expect(l.files).toEqual(['app.py', 'calc.py', 'config.json', 'src/shapes.py', 'test_calc.py']);
    expect(l.complete).toBe(true);
  });

  it('is cut at a whole line within its bound, marked, and then not complete', () => {
    const many = Array.from({ length: 20 }, (_, i) => `module_${i}.py`).join('\n');
    const l = projectListing(many, 40);
    expect(l.text).toBe('module_0.py\nmodule_1.py\nmodule_2.py\n…');
    expect(l.files).toEqual(['module_0.py', 'module_1.py', 'module_2.py']);
    expect(l.complete).toBe(false);
    // A line that does not fit whole is left out, never shown in part (it would name a file that is not there).
    expect(projectListing('abc.py\nlonger_name.py', 12).files).toEqual(['abc.py']);
  });

  it('is not complete when a directory at the depth limit was not opened, or list_dir stopped short', () => {
    expect(projectListing('src/\nsrc/deep/\nsrc/a.py').complete).toBe(false);
    const truncated = projectListing('a.py\nb.py\n[truncated at 2 entries]');
    expect(truncated.files).toEqual(['a.py', 'b.py']);
    expect(truncated.complete).toBe(false);
  });

  it('names a symlink by its own name, and an empty project has no files', () => {
    expect(projectListing('docs/\ndocs/guide.md\nREADME.md -> docs/guide.md').files).toEqual([
      'docs/guide.md',
      'README.md',
    ]);
    const empty = projectListing('(empty directory)');
    expect(empty).toEqual({ text: '(empty directory)', files: [], complete: true });
  });

  describe('as deep as it fits', () => {
    // list_dir's text five levels deep: depth first, sorted by name.
    const nested = [
      'billing/',
      'billing/api/',
      'billing/api/views.py',
      'billing/core/',
      'billing/core/invoices/',
      'billing/core/invoices/mailer.py',
      'billing/core/invoices/models.py',
      'jobs/',
      'jobs/nightly/',
      'jobs/nightly/monthly_close.py',
    ].join('\n');

    it('shows every level of a small project, with its files all listed', () => {
      const l = deepestListing(nested, 5)!;
      expect(l.text).toBe(nested);
      expect(l.files).toContain('billing/core/invoices/mailer.py');
      expect(l.complete).toBe(true);
    });

    it('keeps fewer levels when all of them do not fit, and is then not complete', () => {
      const l = deepestListing(nested, 5, 130)!;
      expect(l.text.split('\n')).toEqual([
        'billing/',
        'billing/api/',
        'billing/api/views.py',
        'billing/core/',
        'billing/core/invoices/',
        'jobs/',
        'jobs/nightly/',
        'jobs/nightly/monthly_close.py',
      ]);
      expect(l.files).toEqual(['billing/api/views.py', 'jobs/nightly/monthly_close.py']);
      // billing/core/invoices/ holds files the listing does not show.
      expect(l.complete).toBe(false);
    });

    it('never keeps fewer than two levels: those are cut at a whole line, as before', () => {
      const l = deepestListing(nested, 5, 30)!;
      expect(l.text).toBe('billing/\nbilling/api/\n…');
      expect(l.complete).toBe(false);
    });

    it('is looked for only when two levels fit with a folder left unopened', () => {
      const twoLevels = nested
        .split('\n')
        .filter((l) => l.split('/').filter(Boolean).length <= 2)
        .join('\n');
      expect(mayListDeeper(twoLevels)).toBe(true);
      // Nothing below the second level to show, or no room for what is below.
      expect(mayListDeeper(listed)).toBe(false);
      expect(mayListDeeper(twoLevels, 30)).toBe(false);
    });

    it('is not had from a walk list_dir stopped short (its later top-level entries are missing)', () => {
      expect(deepestListing(`${nested}\n[truncated at 10 entries]`, 5)).toBeNull();
    });

    it('a folder at the deepest level it shows with nothing under it may be unread: not complete', () => {
      expect(deepestListing('a/\na/b/\na/b/c/\na/b/c/d/\na/b/c/d/e/', 5)!.complete).toBe(false);
      // The same empty folder a level higher than the walk went is empty.
      expect(deepestListing('a/\na/b/\na/b/c/\na/b/c/d/\na/b/c/d/e/\nf.py', 6)!.complete).toBe(true);
    });
  });
});
