#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * The troubleshooting tables of deploy/README.md against the code: every
 * warning and error kdp logs, and nothing else, has a row there, at its level.
 *
 *   node tests/deploy/log-messages.js [SRCDIR]          (ctest: deploy/log-messages)
 *   node tests/deploy/log-messages.js --list [SRCDIR]   each message, its level and where it is logged
 *
 * The messages are the constant message argument of each call of a logging
 * macro at warning or error level (LOG_CALLS), or of a file's own macro that
 * hands its parameter on to one of those as the message, in the C sources
 * under framework/ and plugins/, comments left out. A call whose message is not
 * a string literal is an error of its own: no table could name it. The tables
 * are those of the section "## Troubleshooting": the first column holds the
 * message in backticks, the second its level (W, E, or "E, W" for a message
 * logged at both).
 *
 * Prints one line per check and closes with "N passed, M failed".
 */
const fs = require('fs');
const path = require('path');

/* the macros that log at warning or error level: the index of their message argument, the level */
const LOG_CALLS = {
        kdp_log_warning: [0, 'W'],
        kdp_log_warning_errno: [1, 'W'],
        kdp_log_error: [1, 'E'],
        kdp_backend_log_warning: [1, 'W'],
        kdp_backend_log_error: [2, 'E'],
        KDP_SKIP_LOG_WARN: [5, 'W'],
};
const TABLE_HEADING = '## Troubleshooting';

/* `text` with its comments blanked (newlines kept), string and character literals as they are */
function stripComments(text) {
        let out = '';
        for (let i = 0; i < text.length;) {
                const two = text.slice(i, i + 2);
                if (two === '/*' || two === '//') {
                        const end = two === '/*' ? text.indexOf('*/', i + 2) + 2 : text.indexOf('\n', i);
                        const stop = end <= 1 || end === -1 ? text.length : end;
                        out += text.slice(i, stop).replace(/[^\n]/g, ' ');
                        i = stop;
                } else if (text[i] === '"' || text[i] === '\'') {
                        const q = text[i];
                        let j = i + 1;
                        while (j < text.length && text[j] !== q && text[j] !== '\n')
                                j += text[j] === '\\' ? 2 : 1;
                        out += text.slice(i, j + 1);
                        i = j + 1;
                } else {
                        out += text[i++];
                }
        }
        return out;
}

/* the arguments of the call whose '(' is at `open`, as source text, split at top-level commas */
function callArgs(text, open) {
        const args = [];
        let depth = 0, start = open + 1;
        for (let i = open; i < text.length; i++) {
                const ch = text[i];
                if (ch === '"' || ch === '\'') {
                        for (i++; i < text.length && text[i] !== ch; i += text[i] === '\\' ? 2 : 1)
                                ;
                } else if (ch === '(' || ch === '{' || ch === '[') {
                        depth++;
                } else if (ch === ')' || ch === '}' || ch === ']') {
                        if (--depth === 0) {
                                args.push(text.slice(start, i).trim());
                                return args;
                        }
                } else if (ch === ',' && depth === 1) {
                        args.push(text.slice(start, i).trim());
                        start = i + 1;
                }
        }
        return null;
}

/* the value of `arg` if it is one string literal or adjacent ones ("a" "b"), else null */
function literal(arg) {
        if (!/^("([^"\\\n]|\\.)*"\s*)+$/.test(arg))
                return null;
        return JSON.parse(`"${arg.match(/"(([^"\\\n]|\\.)*)"/g).map((s) => s.slice(1, -1)).join('')}"`);
}

/* the C sources and headers below `dir`, sorted */
function cFiles(dir) {
        return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory()
                ? cFiles(path.join(dir, e.name)) : /\.[ch]$/.test(e.name) ? [path.join(dir, e.name)] : [])).sort();
}

/* each `#define NAME(PARAMS) BODY` of `text` (continuation lines joined): { name, params, body, start, end } */
function macros(text) {
        const out = [];
        for (const m of text.matchAll(/^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)/gm))
                out.push({ name: m[1], params: m[2].split(',').map((p) => p.trim()), body: m[3],
                           start: m.index, end: m.index + m[0].length });
        return out;
}

/*
 * The logging calls of one file: LOG_CALLS, and the file's own macros that hand one of their
 * parameters to one of those as its message (a wrapper is then a logging call of its own).
 */
function fileLogCalls(text) {
        const calls = { ...LOG_CALLS };
        const defs = macros(text);
        for (let grew = true; grew;) {
                grew = false;
                for (const d of defs.filter((x) => !(x.name in calls))) {
                        const re = new RegExp(`\\b(${Object.keys(calls).join('|')})\\s*\\(`, 'g');
                        for (const m of d.body.matchAll(re)) {
                                const args = callArgs(d.body, m.index + m[0].length - 1) || [];
                                const msg = (args[calls[m[1]][0]] || '').replace(/^\((\w+)\)$/, '$1');
                                if (d.params.includes(msg)) {
                                        calls[d.name] = [d.params.indexOf(msg), calls[m[1]][1]];
                                        grew = true;
                                }
                        }
                }
        }
        return { calls, defs };
}

/*
 * { messages: Map(message -> { where: ["file:line", ...], levels: "E" | "W" | "E, W" }),
 *   bad: ["file:line: why", ...] } of the C sources under framework/ and plugins/ of `src`
 */
function logMessages(src) {
        const messages = new Map();
        const bad = [];
        for (const file of ['framework', 'plugins'].flatMap((d) => cFiles(path.join(src, d)))) {
                const rel = path.relative(src, file);
                const text = stripComments(fs.readFileSync(file, 'utf8'));
                const { calls, defs } = fileLogCalls(text);
                const re = new RegExp(`\\b(${Object.keys(calls).join('|')})\\s*\\(`, 'g');
                for (const m of text.matchAll(re)) {
                        if (defs.some((d) => m.index >= d.start && m.index < d.end))
                                continue;       /* in a macro: its callers are read */
                        const where = `${rel}:${text.slice(0, m.index).split('\n').length}`;
                        const args = callArgs(text, m.index + m[0].length - 1);
                        const [at, level] = calls[m[1]];
                        const msg = args && args.length > at ? literal(args[at]) : null;
                        if (msg === null) {
                                bad.push(`${where}: the message of ${m[1]}() is not a string literal`);
                                continue;
                        }
                        const was = messages.get(msg) || { where: [], levels: '' };
                        messages.set(msg, { where: [...was.where, where],
                                            levels: [...new Set([...was.levels.split(', '), level])].filter(Boolean).sort().join(', ') });
                }
        }
        return { messages, bad };
}

/*
 * The rows of the tables of section TABLE_HEADING of `readme` (text), in order: { message, level }
 * from the first two columns (the message in backticks, `\|` for a pipe), and the problems of the
 * rows that are not so.
 */
function tableMessages(readme) {
        const lines = readme.split('\n');
        const at = lines.findIndex((l) => l.trim() === TABLE_HEADING);
        const end = lines.findIndex((l, j) => j > at && /^## /.test(l));
        const section = at < 0 ? [] : lines.slice(at + 1, end < 0 ? lines.length : end);
        const rows = [], bad = [];
        if (at < 0)
                return { rows, bad: [`no "${TABLE_HEADING}" section`] };
        section.forEach((l, i) => {
                if (!l.startsWith('|') || /^\|\s*message\s*\|/.test(l) || /^\|[-| ]+\|$/.test(l))
                        return;
                const m = /^\|\s*`((?:[^`\\]|\\\|)+)`\s*\|\s*([^|]*?)\s*\|/.exec(l);
                if (m)
                        rows.push({ message: m[1].replace(/\\\|/g, '|'), level: m[2] });
                else
                        bad.push(`line ${at + 2 + i}: the first column is not one message in backticks`);
        });
        if (rows.length === 0 && bad.length === 0)
                bad.push(`no table under "${TABLE_HEADING}"`);
        return { rows, bad };
}

let passed = 0, failed = 0;
function report(ok, what, details = []) {
        console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
        if (!ok)
                details.slice(0, 20).forEach((d) => console.log(`       ${d}`));
        ok ? passed++ : failed++;
}

function main(argv) {
        const list = argv[0] === '--list';
        const src = path.resolve((list ? argv[1] : argv[0]) || path.join(__dirname, '..', '..'));
        const { messages, bad } = logMessages(src);
        if (list) {
                for (const [msg, { where, levels }] of [...messages].sort(([a], [b]) => a.localeCompare(b)))
                        console.log(`${msg}\t${levels}\t${where.join(' ')}`);
                bad.forEach((b) => console.error(b));
                return bad.length ? 1 : 0;
        }
        const readme = fs.readFileSync(path.join(src, 'deploy', 'README.md'), 'utf8');
        const { rows, bad: badRows } = tableMessages(readme);
        const seen = new Set();
        const twice = rows.filter((r) => seen.has(r.message) || !seen.add(r.message)).map((r) => r.message);
        report(messages.size > 0 && bad.length === 0,
               `every warning and error call under framework/ and plugins/ logs a literal message (${messages.size} messages)`,
               messages.size ? bad : ['no logging call found']);
        report(badRows.length === 0, `deploy/README.md has "${TABLE_HEADING}" tables of messages in backticks`, badRows);
        report(twice.length === 0, 'no message has two rows', twice);
        const missing = [...messages.keys()].filter((m) => !seen.has(m));
        report(missing.length === 0, 'every message logged has a row',
               missing.map((m) => `"${m}" (${messages.get(m).where.join(', ')})`));
        const stale = rows.filter((r) => !messages.has(r.message));
        report(stale.length === 0, 'every row names a message still logged', stale.map((r) => `"${r.message}"`));
        const wrong = rows.filter((r) => messages.has(r.message) && messages.get(r.message).levels !== r.level);
        report(wrong.length === 0, 'every row gives the level the message is logged at',
               wrong.map((r) => `"${r.message}": ${r.level}, logged at ${messages.get(r.message).levels}`));

        /* the checks themselves: a table without a row lacks its message, a pipe is read unescaped */
        const first = [...messages.keys()][0];
        const without = tableMessages(readme.split('\n').filter((l) => !l.startsWith(`| \`${first}\` |`)).join('\n')).rows;
        report(first !== undefined && !without.some((r) => r.message === first), 'a table without a row lacks its message');
        const piped = tableMessages(`${TABLE_HEADING}\n\n| message | level |\n|---|---|\n| \`A\\|B\` | W | x |\n`).rows;
        report(JSON.stringify(piped) === JSON.stringify([{ message: 'A|B', level: 'W' }]), 'a row reads `\\|` as a pipe');
        const sample = stripComments('/* kdp_log_warning("In a comment") */ kdp_log_error(r, "Failed" " twice", X);');
        report(literal(callArgs(sample, sample.indexOf('(', sample.indexOf('kdp_log_error')))[1]) === 'Failed twice' &&
               !/In a comment/.test(sample), 'the extractor joins adjacent literals and skips comments');

        console.log(`${passed} passed, ${failed} failed`);
        return failed === 0 ? 0 : 1;
}

if (require.main === module)
        process.exitCode = main(process.argv.slice(2));
module.exports = { logMessages, tableMessages };
