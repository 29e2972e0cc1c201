#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * Prints one value of what a kustomization under deploy/ renders, for tests that run kdpd the
 * way a manifest says:
 *
 *   node tests/deploy/manifest.js data DIR CONFIGMAP KEY    the ConfigMap's data[KEY], as is
 *   node tests/deploy/manifest.js args DIR DAEMONSET        its first container's args, one a line
 *   node tests/deploy/manifest.js probe DIR DAEMONSET KIND  its first container's KIND (livenessProbe,
 *                                                           readinessProbe, startupProbe): "PATH PORT"
 *                                                           of its httpGet, PORT as the probe names it
 *
 * DIR is rendered by `kubectl kustomize` (what `kubectl apply -k` sends; KDP_KUBECTL names another
 * kubectl, as for validate.js). Exit 1 with a message when it does not render, or the object or
 * the value is missing.
 */
const { kustomize } = require('./validate.js');

function render(dir) {
        const r = kustomize(dir);
        if (r.error)
                throw new Error(r.error);
        return r.objs;
}

function main(argv) {
        const [what, dir, name, key] = argv;
        const find = (kind) => {
                const o = render(dir).find((x) => x.kind === kind && x.metadata && x.metadata.name === name);
                if (!o)
                        throw new Error(`${dir} renders no ${kind} ${name}`);
                return o;
        };
        if (what === 'data' && key) {
                const v = (find('ConfigMap').data || {})[key];
                if (typeof v !== 'string')
                        throw new Error(`ConfigMap ${name} has no data ${key}`);
                process.stdout.write(v);
        } else if (what === 'args' && name && !key) {
                const c = (find('DaemonSet').spec.template.spec.containers || [])[0];
                if (!c || !Array.isArray(c.args))
                        throw new Error(`DaemonSet ${name} has no container with args`);
                process.stdout.write(c.args.map((a) => `${a}\n`).join(''));
        } else if (what === 'probe' && /^(liveness|readiness|startup)Probe$/.test(key || '')) {
                const c = (find('DaemonSet').spec.template.spec.containers || [])[0];
                const get = c && c[key] && c[key].httpGet;
                if (!get || typeof get.path !== 'string' || get.port === undefined)
                        throw new Error(`DaemonSet ${name} has no ${key} with httpGet`);
                process.stdout.write(`${get.path} ${get.port}\n`);
        } else {
                throw new Error('usage: manifest.js data DIR CONFIGMAP KEY | args DIR DAEMONSET | probe DIR DAEMONSET KIND');
        }
}

try {
        main(process.argv.slice(2));
} catch (e) {
        console.error(`manifest.js: ${e.message}`);
        process.exitCode = 1;
}
