// SPDX-License-Identifier: Apache-2.0
// The saved page's regular expressions against the server's: app.js's
// ereToJs() (taken from the page's own source) must make every pattern of
// PATTERNS match the same NAMES as regcomp does (eregrep's answers), and
// refuse those regcomp refuses.  Needs no browser: node runs the function.
//
// Usage: node ere.test.mjs APP.js INPUT EXPECTED
//   INPUT: patterns, a line "--", names (eregrep's input);
//   EXPECTED: eregrep's output on INPUT (a line of 0/1/E per pattern).
// Exit status 0 when every pattern agrees, 1 otherwise.
import { readFileSync } from 'node:fs';

const [appPath, inputPath, expectedPath] = process.argv.slice(2);
const app = readFileSync(appPath, 'utf8');
const from = app.indexOf('const POSIX_CLASSES');
const to = app.indexOf('\n}\n', app.indexOf('function ereToJs(')) + 3;
if (from < 0 || to < 3) { console.error('no ereToJs in ' + appPath); process.exit(2); }
const ereToJs = new Function(app.slice(from, to) + '\nreturn ereToJs;')();

const lines = readFileSync(inputPath, 'utf8').split('\n');
const sep = lines.indexOf('--');
const pats = lines.slice(0, sep), names = lines.slice(sep + 1).filter((l) => l !== '');
const want = readFileSync(expectedPath, 'utf8').split('\n');
let failures = 0;
pats.forEach((p, i) => {
  let got;
  try {
    const re = p.startsWith('(?i)') ? new RegExp(ereToJs(p.slice(4)), 'i') : new RegExp(ereToJs(p));
    got = names.map((n) => (re.test(n) ? '1' : '0')).join('');
  } catch (e) {
    got = 'E'.repeat(names.length);
  }
  if (got === want[i]) console.log(`ok - ${p}`);
  else {
    failures++;
    console.log(`not ok - ${p}: page ${got}, server ${want[i]}`);
  }
});
process.exit(failures ? 1 : 0);
