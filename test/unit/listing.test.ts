/** The project's listing as the prompts use it: whole lines within its bound, its files, and whether it has them all. */
import { projectListing } from '../../activities/project/listing';

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
});
