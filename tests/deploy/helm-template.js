#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * deploy/helm-template: the chart deploy/helm/kdp renders the objects of each overlay of deploy/.
 *
 *   node tests/deploy/helm-template.js SRCDIR HELM
 *
 * For every directory deploy/<backend>/<overlay> with a kustomization.yaml (base excepted),
 * `HELM template --namespace kube-system` with the values OVERLAY_VALUES gives that overlay's name
 * (and backend=<backend>) must render, as a set of objects keyed by kind, namespace and name,
 * exactly what `kubectl kustomize` renders of the directory (KDP_KUBECTL names the kubectl, as for
 * deploy/schema): no field more, none less, none other, no label of the chart's own. An overlay
 * that no entry names fails, and so does a backend the chart does not have. Then the values that
 * have no overlay (the image, the config file) change exactly their fields, and the combinations
 * the chart refuses fail with their message.
 *
 * Prints one line per check and closes with "N passed, M failed".
 */
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { parseYaml, kustomize, renderingDiff, report, results } = require('./validate.js');

/* the values that render deploy/<backend>/<overlay>, by the overlay's directory name */
const OVERLAY_VALUES = {
        'unprivileged': [],
        'privileged': ['privileged=true'],
        'kubelet-sock': ['registration=kubelet-sock'],
        'plugin-watcher': ['registration=plugin-watcher'],
        'region': ['fpga.mode=region'],
};

/* --set of each KEY=VALUE */
const set = (...values) => values.flatMap((v) => ['--set', v]);

/* { objs } of `helm template` with the values FLAGS (--set, --set-file), or { error } */
function helmTemplate(helm, chart, flags) {
        const args = ['template', 'kdp', chart, '--namespace', 'kube-system', ...flags];
        const r = spawnSync(helm, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
        if (r.error)
                return { error: `${helm}: ${r.error.message}` };
        if (r.status !== 0)
                return { error: (r.stderr || '').trim() };
        const docs = parseYaml(r.stdout);
        const bad = docs.find((d) => d.errors.length);
        if (bad)
                return { error: `helm template printed bad YAML: ${bad.errors[0]}` };
        return { objs: docs.filter((d) => d.value != null).map((d) => d.value) };
}

/* every overlay directory of deploy/ (relative to it): <backend>/<overlay> with a kustomization, not base */
function overlays(deploy) {
        const dirs = (d) => fs.readdirSync(d, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
        return dirs(deploy).filter((b) => b !== 'helm').flatMap((b) => dirs(path.join(deploy, b))
                .filter((o) => o !== 'base' && fs.existsSync(path.join(deploy, b, o, 'kustomization.yaml')))
                .map((o) => `${b}/${o}`));
}

/* `helm template` with FLAGS renders `want` exactly: report WHAT */
function same(helm, chart, flags, want, what) {
        const got = helmTemplate(helm, chart, flags);
        const diff = got.error ? [got.error] : renderingDiff(want, got.objs);
        if (!got.error && got.objs.length !== want.length)
                diff.push(`${got.objs.length} objects, not ${want.length}`);
        report(diff.length === 0, what, diff.map((d) => `differs: ${d}`));
}

/* `helm template` with FLAGS fails, saying `message` */
function refused(helm, chart, flags, message) {
        const got = helmTemplate(helm, chart, flags);
        report(!!got.error && got.error.includes(message), `${flags.join(' ')} is refused: ${message}`,
               [got.error ? `said: ${got.error}` : 'rendered']);
}

function main() {
        const src = path.resolve(process.argv[2] || path.join(__dirname, '..', '..'));
        const helm = process.argv[3] || 'helm';
        const deploy = path.join(src, 'deploy');
        const chart = path.join(deploy, 'helm', 'kdp');

        const found = overlays(deploy);
        report(found.length > 0, `deploy/ has overlays: ${found.join(', ')}`);
        const rendered = new Map();
        for (const dir of found) {
                const [backend, overlay] = dir.split('/');
                const k = kustomize(path.join(deploy, dir));
                if (!report(!k.error, `deploy/${dir}: kubectl kustomize renders it`, [k.error]))
                        continue;
                rendered.set(dir, k.objs);
                const values = OVERLAY_VALUES[overlay];
                if (!report(!!values, `deploy/${dir}: values that render it are known (OVERLAY_VALUES)`,
                            [`no values for an overlay named ${overlay}`]))
                        continue;
                const flags = set(`backend=${backend}`, ...values);
                same(helm, chart, flags, k.objs, `deploy/${dir} = helm template ${flags.join(' ')}`);
        }
        same(helm, chart, [], rendered.get('gpu/unprivileged') || [], 'the defaults render deploy/gpu/unprivileged');

        // a config file, as an operator gives one: --set-file config=FILE
        const tmp = fs.mkdtempSync(path.join(require('os').tmpdir(), 'kdp-helm-template.'));
        const file = (name, text) => { const f = path.join(tmp, name); fs.writeFileSync(f, text); return f; };

        // the values no overlay has: exactly their fields change
        const example = rendered.get('example/unprivileged');
        if (report(!!example, 'deploy/example/unprivileged rendered')) {
                const edit = (fn) => { const objs = JSON.parse(JSON.stringify(example)); fn(objs); return objs; };
                const of = (objs, kind) => objs.find((o) => o.kind === kind);
                same(helm, chart, set('backend=example', 'image.repository=registry.example.com/kdp', 'image.tag=0.2.0',
                                      'image.pullPolicy=Always'),
                     edit((objs) => Object.assign(of(objs, 'DaemonSet').spec.template.spec.containers[0],
                                                  { image: 'registry.example.com/kdp:0.2.0', imagePullPolicy: 'Always' })),
                     'image.repository, image.tag, image.pullPolicy: the container\'s image and imagePullPolicy only');
                const config = 'example:\n  devices: 4\n';
                same(helm, chart, [...set('backend=example'), '--set-file', `config=${file('example.yaml', config)}`],
                     edit((objs) => { of(objs, 'ConfigMap').data = { 'config.yaml': config }; }),
                     'config: the ConfigMap\'s config.yaml only, whole');
        }
        const sriov = rendered.get('sriov/unprivileged');
        if (report(!!sriov, 'deploy/sriov/unprivileged rendered')) {
                const objs = JSON.parse(JSON.stringify(sriov));
                const json = '{"resourceList": []}';
                objs.find((o) => o.kind === 'ConfigMap').data = { 'config.json': json };
                same(helm, chart, [...set('backend=sriov'), '--set-file', `config=${file('config.json', json)}`], objs, 'config with backend sriov: the ConfigMap\'s config.json only');
        }

        // what the chart refuses
        refused(helm, chart, set('backend=example', 'privileged=true'),
                'privileged: true is for the gpu backend only (backend example opens no device node)');
        refused(helm, chart, [...set('backend=fpga', 'fpga.mode=region'), '--set-file', `config=${file('fpga.yaml', 'fpga:\n  mode: af\n')}`],
                'fpga.mode: region and config both given');
        refused(helm, chart, set('backend=tpu'), "- at '/backend': value must be one of 'gpu', 'sriov', 'fpga', 'example'");
        refused(helm, chart, set('registration=both'),
                "- at '/registration': value must be one of 'auto', 'plugin-watcher', 'kubelet-sock'");
        refused(helm, chart, set('replicas=2'), "- at '': additional properties 'replicas' not allowed");
        fs.rmSync(tmp, { recursive: true });

        const { passed, failed } = results();
        console.log(`${passed} passed, ${failed} failed`);
        return failed === 0 ? 0 : 1;
}

process.exitCode = main();
