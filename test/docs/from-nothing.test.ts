/**
 * Starting from nothing, as the README and docs/deploying.md tell it: the machine's packages and
 * Python tools the tests need, the CDK bootstrap an account needs once, what `-c config=FILE`
 * is, and the command name, which runs this clone's CLI and never a registry package.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFile(join(ROOT, file), 'utf8');
const run = promisify(execFile);

/** A README section: from its `## title` to the next. */
async function readmeSection(title: string): Promise<string> {
  const readme = await read('README.md');
  const start = readme.indexOf(`## ${title}\n`);
  expect(start, `README.md has a "${title}" section`).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

describe('from nothing', () => {
  it("names in the README's set-up every Debian package and Python tool .ci/run installs for the tests", async () => {
    const ci = await read('.ci/run');
    const apt = /apt-get install -y ([^\n]+)/.exec(ci)?.[1]?.trim().split(/\s+/) ?? [];
    const pip = [
      ...(/pip install --quiet ([^\n]+)/.exec(ci)?.[1] ?? '').matchAll(/'([^']+)'|(\S+)/g),
    ]
      .map((match) => (match[1] ?? match[2] ?? '').replace(/[<>=].*$/, ''))
      .filter((name) => name !== '');
    expect(apt).toEqual(expect.arrayContaining(['containernetworking-plugins', 'chromium']));
    expect(pip).toEqual(['moto[server]', 'cfn-lint']);
    const setUp = await readmeSection('Set up');
    // prometheus (its promtool checks the example alert rules) whether or not .ci/run lists it yet.
    for (const name of [...new Set([...apt, 'prometheus'])]) expect(setUp, name).toContain(name);
    for (const name of pip) expect(setUp, name).toContain(name);
    expect(setUp).toContain('moto[server]>=5.2,<5.3');
  });

  it('says to bootstrap the account for CDK once, and what the config file of -c config=FILE is', async () => {
    const deploying = await read('docs/deploying.md');
    const readme = await readmeSection('Deploying');
    for (const [file, text] of [
      ['docs/deploying.md', deploying],
      ['README.md', readme],
    ] as const) {
      expect(text, file).toMatch(/npx cdk bootstrap aws:\/\/ACCOUNT\/REGION/);
      expect(text, file).toMatch(/once per account and Region/);
      expect(text, file).toContain('-c config=berth.json');
    }
    // The file is the JSON config every host reads, documented key by key, read by infra/.
    expect(deploying).toContain('[the JSON config](configuration.md)');
    expect(deploying).toContain('`infra/settings.ts`');
    expect(deploying).toMatch(/relative to the directory `cdk` runs in/);
    expect(readme).toContain('[configuration](docs/configuration.md)');
  });

  it("names the package apart from the registry's berth, keeps the command berth inside the clone, and says where it runs", async () => {
    const manifest = JSON.parse(await read('package.json')) as {
      name: string;
      bin: Record<string, string>;
      private: boolean;
    };
    const lock = JSON.parse(await read('package-lock.json')) as {
      name: string;
      packages: Record<string, { name?: string }>;
    };
    // `berth` on the registry is an unrelated package: this one is never published under it.
    expect(manifest.name).toBe('berth-gameservers');
    expect(manifest.private).toBe(true);
    expect(lock.name).toBe(manifest.name);
    expect(lock.packages['']?.name).toBe(manifest.name);
    expect(manifest.bin).toEqual({ berth: 'bin/berth.mjs' });
    const setUp = await readmeSection('Set up');
    expect(setUp).toContain('npm exec --prefix');
    expect(setUp).toMatch(/inside the clone/);
    // npm runs the clone's own bin, offline, from the clone and from anywhere with --prefix: no
    // registry is asked for a package named berth.
    const elsewhere = await mkdtemp(join(tmpdir(), 'berth-elsewhere-'));
    for (const [cwd, prefix] of [
      [ROOT, []],
      [elsewhere, ['--prefix', ROOT]],
    ] as const) {
      const { stdout } = await run(
        'npm',
        ['exec', '--offline', '--yes=false', ...prefix, '--', 'berth', '--version'],
        { cwd, env: { ...process.env, npm_config_update_notifier: 'false' } },
      );
      expect(stdout.trim(), cwd).toBe(JSON.parse(await read('package.json')).version);
    }
  });
});
