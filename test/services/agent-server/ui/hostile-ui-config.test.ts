import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AppConfigError, GraphLoadError } from '../../../../src/services/agent-server/app-config.ts';
import { createAgentServer } from '../../../../src/services/agent-server/app.ts';
import { testVerifier } from '../helpers.ts';
import { CARD, tempApps, withUi } from './ui-apps.ts';

/**
 * A deployment's repository is anyone's: `ui` of its langgraph.json names files the bundler reads (and whatever they
 * import). A path out of the app's folder (`../`, absolute, a symlink) is refused before anything reads it, naming
 * the key; a component that does not compile fails the start with one line naming it, file, line and column.
 */
const apps = tempApps();
afterAll(() => apps.removeAll());

const start = (configPath: string) =>
  createAgentServer({ configPath, verifyApiKey: testVerifier, log: pino({ level: 'silent' }) }).catch(
    (e: unknown) => e,
  );

describe('ui paths that leave the app folder are refused, naming the key', () => {
  it.each([
    ['../../etc/passwd', /: ui\.agent: file \.\.\/\.\.\/etc\/passwd is outside the app's folder$/],
    [
      '/etc/passwd',
      /: ui\.agent: \/etc\/passwd must be a path relative to the app's folder, e\.g\. "\.\/src\/ui\.tsx"$/,
    ],
    ['./src/../../outside.tsx', /: ui\.agent: file \.\/src\/\.\.\/\.\.\/outside\.tsx is outside the app's folder$/],
  ])('%s', async (path, expected) => {
    const err = await start(apps.make({ 'langgraph.json': withUi({ agent: path }) }));
    expect(err).toBeInstanceOf(AppConfigError);
    expect(err).not.toBeInstanceOf(GraphLoadError);
    expect((err as Error).message).toMatch(expected);
  });

  it('a symlink to a file outside (src/ui.tsx -> /etc/passwd): refused, nothing of the file in the message', async () => {
    const err = await start(
      apps.make({ 'langgraph.json': withUi({ agent: './src/ui.tsx' }), 'src/ui.tsx': { link: '/etc/passwd' } }),
    );
    expect((err as Error).message).toMatch(/: ui\.agent: file \.\/src\/ui\.tsx points outside the app's folder$/);
    expect((err as Error).message).not.toContain('root:');
  });

  it('a folder symlinked out (src -> /etc): refused', async () => {
    const err = await start(apps.make({ 'langgraph.json': withUi({ agent: './src/passwd' }), src: { link: '/etc' } }));
    expect((err as Error).message).toMatch(/: ui\.agent: file \.\/src\/passwd points outside the app's folder$/);
  });

  it.each([
    [['not', 'a', 'map'], /: ui: must be a map of graph names to component files/],
    [{ agent: 3 }, /: ui\.agent: must be the path of a file of React components/],
    [{ 'a"><script>': './x.tsx' }, /: ui\.a"><script>: names are 1-128 letters, digits/],
  ])('ui %j: refused', async (ui, expected) => {
    expect(((await start(apps.make({ 'langgraph.json': withUi(ui) }))) as Error).message).toMatch(expected);
  });

  it('ui_config.shared must list package names', async () => {
    const err = await start(
      apps.make({
        'langgraph.json': withUi({ agent: './ui.tsx' }, { ui_config: { shared: ['../../x'] } }),
        'ui.tsx': CARD,
      }),
    );
    expect((err as Error).message).toMatch(/: ui_config\.shared: must be a list of package names/);
  });
});

describe('a component that does not build fails the start in one line', () => {
  it('a syntax error: GraphLoadError `ui.agent: src/ui.tsx:<line>:<col>: <esbuild message>`', async () => {
    const err = await start(
      apps.make({
        'langgraph.json': withUi({ agent: './src/ui.tsx' }),
        'src/ui.tsx': 'export default {\n  weather: () => <b>hi</b> if\n};\n',
      }),
    );
    expect(err).toBeInstanceOf(GraphLoadError);
    expect((err as GraphLoadError).key).toBe('ui.agent');
    expect((err as GraphLoadError).line).toMatch(/^ui\.agent: src\/ui\.tsx:2:\d+: Expected "\}" but found "if"$/);
  });

  it('an import that does not resolve names the module, without the host path of the app', async () => {
    const configPath = apps.make({
      'langgraph.json': withUi({ agent: './ui.tsx' }),
      'ui.tsx': "import { x } from 'no-such-package-here';\nexport default { x };\n",
    });
    const err = (await start(configPath)) as GraphLoadError;
    expect(err.line).toMatch(/^ui\.agent: ui\.tsx:1:\d+: Could not resolve "no-such-package-here"$/);
    expect(err.line).not.toContain(configPath.replace(/\/langgraph\.json$/, ''));
  });

  it('run alone (main.ts): exit 3, and the last line of stderr is that line', async () => {
    const configPath = apps.make({
      'langgraph.json': withUi({ agent: './src/ui.tsx' }),
      'src/ui.tsx': 'export default {\n  weather: () => <b>hi</b> if\n};\n',
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/services/agent-server/main.ts'], {
      cwd: fileURLToPath(new URL('../../../../', import.meta.url)),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        APP_CONFIG: configPath,
        AGENT_SERVER_PORT: '0',
        AGENT_SERVER_API_KEYS: 'k-test-0123456789abcdef',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    expect(code).toBe(3);
    // esbuild prints its own diagnostic (with the code frame) before it; the server's verdict is one line.
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines.at(-1)).toMatch(/^agent server: ui\.agent: src\/ui\.tsx:2:\d+: Expected "\}" but found "if"$/);
    expect(stderr).not.toMatch(/^\s+at /m); // no stack
  }, 30_000);
});
