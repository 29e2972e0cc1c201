#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * Validates every YAML document under deploy/ against the Kubernetes API
 * schema, offline, then checks the properties the GPU DaemonSet must have.
 *
 *   node tests/deploy/validate.js [SRCDIR]          (ctest: deploy/schema)
 *
 * The schema: kubernetes-models 4.3.1 ships the OpenAPI definitions of the
 * Kubernetes 1.27 API as JSON schemas (one file per type) and registers each
 * with @kubernetes-models/validate, which validates with ajv. Those schemas
 * accept unknown fields, as the API server does by default; kubectl's strict
 * field validation rejects them, and so do we: every schema is closed
 * (additionalProperties: false on each object type that lists properties) as
 * it is registered. Maps (labels, limits, data) keep their own value schema.
 *
 * YAML is read as the API machinery reads it (YAML 1.1: yes/no/on/off are
 * booleans, 0644 is octal) and duplicate keys are errors.
 *
 * A few rules the API server enforces beyond the schema are checked too
 * (apiErrors). Kustomizations are rendered (resources, then inline JSON 6902
 * patches) and the objects they produce are validated as well.
 *
 * Then tests/deploy/bad/: each document there is broken on purpose and says,
 * in its kdp.test/expect annotation, which error it must get ("KEYWORD PATH
 * [DETAIL]"). A validator that let any of them through fails this test. The
 * property checks are run against broken copies of the DaemonSet as well.
 *
 * Prints one line per check and closes with "N passed, M failed".
 */
const fs = require('fs');
const path = require('path');

let kv, YAML;
try {
        kv = require('@kubernetes-models/validate');
        YAML = require('yaml');
        require.resolve('kubernetes-models/v1');
} catch (e) {
        console.error(`validate.js: ${e.message}`);
        console.error('The validator\'s packages are missing: run scripts/install-deps ' +
                '(it runs `npm ci` in tests/deploy).');
        process.exit(1);
}

// ---- strict schemas ----------------------------------------------------------------------------

let closedObjects = 0;
function closeObjects(s) {
        if (!s || typeof s !== 'object')
                return;
        if (Array.isArray(s)) {
                s.forEach(closeObjects);
                return;
        }
        if (s.properties && s.additionalProperties === undefined) {
                s.additionalProperties = false;
                closedObjects++;
        }
        for (const k of ['properties', 'patternProperties', 'definitions'])
                if (s[k])
                        Object.values(s[k]).forEach(closeObjects);
        for (const k of ['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf'])
                closeObjects(s[k]);
}
const register = kv.register;
kv.register = (id, schema) => {
        closeObjects(schema);
        register(id, schema);
};

function modelFor(apiVersion, kind) {
        if (typeof apiVersion !== 'string' || typeof kind !== 'string' ||
            !/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind))
                return null;
        let group;
        try {
                group = require(`kubernetes-models/${apiVersion}`);
        } catch {
                return null;
        }
        const M = group[kind];
        return M && M.apiVersion === apiVersion && M.kind === kind ? M : null;
}

/* [] when `obj` is a valid object of its apiVersion and kind, else ajv-style errors */
function schemaErrors(obj) {
        if (!obj || typeof obj !== 'object' || Array.isArray(obj))
                return [{ keyword: 'type', instancePath: '', message: 'a document must be a mapping' }];
        const M = modelFor(obj.apiVersion, obj.kind);
        if (!M)
                return [{ keyword: 'no-schema', instancePath: '',
                          message: `no Kubernetes schema for apiVersion ${obj.apiVersion} kind ${obj.kind}` }];
        try {
                new M(obj).validate();
                return apiErrors(obj);
        } catch (e) {
                if (Array.isArray(e.errors))
                        return e.errors;
                throw e;
        }
}

/*
 * What the API server checks beyond the schema, for pods and pod templates:
 * mounts name volumes, container names are unique, a workload's selector
 * matches its template, privileged goes without allowPrivilegeEscalation: false.
 */
function apiErrors(obj) {
        const errs = [];
        const err = (instancePath, message) => errs.push({ keyword: 'api', instancePath, message });
        const workload = ['DaemonSet', 'Deployment', 'StatefulSet', 'ReplicaSet', 'Job'].includes(obj.kind);
        if (obj.kind !== 'Pod' && !workload)
                return errs;
        const base = obj.kind === 'Pod' ? '/spec' : '/spec/template/spec';
        const spec = (obj.kind === 'Pod' ? obj.spec : obj.spec?.template?.spec) || {};
        if (workload) {
                const want = obj.spec?.selector?.matchLabels || {};
                const have = obj.spec?.template?.metadata?.labels || {};
                for (const [k, v] of Object.entries(want))
                        if (have[k] !== v)
                                err('/spec/selector/matchLabels', `selector ${k}=${v} does not match the template's labels`);
        }
        const volumes = new Set((spec.volumes || []).map((v) => v.name));
        const names = new Set();
        for (const kind of ['initContainers', 'containers']) {
                (spec[kind] || []).forEach((c, i) => {
                        const at = `${base}/${kind}/${i}`;
                        if (names.has(c.name))
                                err(`${at}/name`, `duplicate container name ${c.name}`);
                        names.add(c.name);
                        (c.volumeMounts || []).forEach((m, j) => {
                                if (!volumes.has(m.name))
                                        err(`${at}/volumeMounts/${j}`, `mounts volume ${m.name}, which the pod does not have`);
                        });
                        const sc = c.securityContext || {};
                        if (sc.privileged === true && sc.allowPrivilegeEscalation === false)
                                err(`${at}/securityContext`, 'privileged with allowPrivilegeEscalation: false');
                });
        }
        return errs;
}

function formatError(e) {
        let s = `${e.instancePath || '/'}: ${e.message}`;
        if (e.params && e.params.additionalProperty !== undefined)
                s += ` (${e.params.additionalProperty})`;
        else if (e.params && e.params.allowedValues)
                s += ` (${e.params.allowedValues.join(', ')})`;
        return s;
}

// ---- reporting ---------------------------------------------------------------------------------

let passed = 0, failed = 0;
function report(ok, what, details = []) {
        console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
        if (!ok)
                for (const d of details.slice(0, 12))
                        console.log(`       ${d}`);
        if (ok)
                passed++;
        else
                failed++;
        return ok;
}

// ---- YAML --------------------------------------------------------------------------------------

function parseYaml(text) {
        const docs = YAML.parseAllDocuments(text, { version: '1.1', uniqueKeys: true, merge: false, prettyErrors: true });
        return (Array.isArray(docs) ? docs : []).map((d) => ({
                errors: d.errors.map((e) => e.message.split('\n')[0]),
                value: d.errors.length ? undefined : d.toJS({ maxAliasCount: 0 }),
        }));
}

/* every non-empty document of `file`: { label, value, errors } */
function readDocs(file, rel) {
        const docs = parseYaml(fs.readFileSync(file, 'utf8')).filter((d) => d.errors.length || d.value != null);
        return docs.map((d, i) => ({ label: docs.length > 1 ? `${rel}#${i}` : rel, ...d }));
}

function walk(dir) {
        const out = [];
        for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
                const p = path.join(dir, e.name);
                if (e.isDirectory())
                        out.push(...walk(p));
                else if (/\.ya?ml$/.test(e.name))
                        out.push(p);
        }
        return out;
}

function describe(obj) {
        const m = (obj && obj.metadata) || {};
        const name = m.namespace ? `${m.namespace}/${m.name}` : m.name;
        return `${obj && obj.apiVersion} ${obj && obj.kind} ${name}`;
}

// ---- kustomize (the subset deploy/ uses) -------------------------------------------------------

const KUSTOMIZE_API = 'kustomize.config.k8s.io/v1beta1';
const isKustomization = (o) => o && o.apiVersion === KUSTOMIZE_API && o.kind === 'Kustomization';

function pointer(p) {
        if (p === '')
                return [];
        if (!p.startsWith('/'))
                throw new Error(`bad JSON pointer "${p}"`);
        return p.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function applyJsonPatch(doc, ops) {
        if (!Array.isArray(ops))
                throw new Error('a JSON 6902 patch must be a list of operations');
        for (const op of ops) {
                const toks = pointer(op.path);
                const last = toks.pop();
                let parent = doc;
                for (const t of toks) {
                        if (parent === null || typeof parent !== 'object' || !(t in parent))
                                throw new Error(`${op.op} ${op.path}: no such path`);
                        parent = parent[t];
                }
                const isArr = Array.isArray(parent);
                const idx = isArr ? (last === '-' ? parent.length : Number(last)) : last;
                if (isArr && !(Number.isInteger(idx) && idx >= 0 && idx <= parent.length))
                        throw new Error(`${op.op} ${op.path}: bad index`);
                switch (op.op) {
                case 'add':
                        if (isArr)
                                parent.splice(idx, 0, op.value);
                        else
                                parent[idx] = op.value;
                        break;
                case 'replace':
                case 'remove':
                        if (!(idx in parent) || (isArr && idx === parent.length))
                                throw new Error(`${op.op} ${op.path}: no such path`);
                        if (op.op === 'remove')
                                isArr ? parent.splice(idx, 1) : delete parent[idx];
                        else
                                parent[idx] = op.value;
                        break;
                default:
                        throw new Error(`op "${op.op}" is not supported here`);
                }
        }
}

const KUSTOMIZATION_KEYS = new Set(['apiVersion', 'kind', 'metadata', 'namespace', 'resources', 'patches', 'images', 'labels']);

/* the objects `kubectl apply -k DIR` would send */
function renderKustomization(dir, seen = new Set()) {
        const real = fs.realpathSync(dir);
        if (seen.has(real))
                throw new Error(`${dir}: kustomization cycle`);
        seen.add(real);
        const file = path.join(dir, 'kustomization.yaml');
        const docs = parseYaml(fs.readFileSync(file, 'utf8')).filter((d) => d.errors.length || d.value != null);
        if (docs.length !== 1 || docs[0].errors.length)
                throw new Error(`${file}: ${docs.length !== 1 ? 'want exactly one document' : docs[0].errors[0]}`);
        const k = docs[0].value;
        for (const key of Object.keys(k))
                if (!KUSTOMIZATION_KEYS.has(key))
                        throw new Error(`${file}: "${key}" is not checked by tests/deploy/validate.js`);
        let objs = [];
        for (const r of k.resources || []) {
                const p = path.join(dir, r);
                if (!fs.existsSync(p))
                        throw new Error(`${file}: resource ${r} does not exist`);
                if (fs.statSync(p).isDirectory()) {
                        objs.push(...renderKustomization(p, seen));
                } else {
                        for (const d of parseYaml(fs.readFileSync(p, 'utf8'))) {
                                if (d.errors.length)
                                        throw new Error(`${r}: ${d.errors[0]}`);
                                if (d.value != null)
                                        objs.push(d.value);
                        }
                }
        }
        objs = JSON.parse(JSON.stringify(objs));
        for (const [i, p] of (k.patches || []).entries()) {
                const t = p.target || {};
                if (typeof p.patch !== 'string' || p.path !== undefined)
                        throw new Error(`${file}: patches[${i}]: only inline JSON 6902 patches are checked here`);
                const group = (o) => (o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '');
                const hits = objs.filter((o) => (t.kind === undefined || o.kind === t.kind) &&
                        (t.name === undefined || (o.metadata && o.metadata.name === t.name)) &&
                        (t.group === undefined || group(o) === t.group) &&
                        (t.version === undefined || o.apiVersion.split('/').pop() === t.version));
                if (hits.length === 0)
                        throw new Error(`${file}: patches[${i}] matches no resource`);
                const ops = parseYaml(p.patch);
                if (ops.length !== 1 || ops[0].errors.length)
                        throw new Error(`${file}: patches[${i}]: not one YAML document`);
                for (const o of hits)
                        applyJsonPatch(o, ops[0].value);
        }
        if (k.namespace)
                for (const o of objs)
                        o.metadata = { ...o.metadata, namespace: k.namespace };
        seen.delete(real);
        return objs;
}

// ---- the properties the GPU DaemonSet must have --------------------------------------------------

const NFD_LABELS = ['pci-0302_10de', 'pci-0300_10de', 'pci-0380_1002', 'pci-1200_1002', 'pci-0380_8086', 'pci-0300_8086']
        .map((l) => `feature.node.kubernetes.io/${l}.present`);
const GPU_TAINTS = ['nvidia.com/gpu', 'amd.com/gpu', 'gpu.intel.com/i915'];
const HOST_MOUNTS = [   // hostPath, where it is mounted, read-only?
        ['/var/lib/kubelet/device-plugins', '/var/lib/kubelet/device-plugins', false],
        ['/dev', '/dev', true],
        ['/run/udev', '/run/udev', true],
        ['/var/run/cdi', '/var/run/cdi', false],
        ['/proc/driver', '/host/proc/driver', true],
];

function mebibytes(q) {
        const m = /^([0-9.]+)(Ki|Mi|Gi|k|M|G)?$/.exec(String(q));
        if (!m)
                return NaN;
        const f = { Ki: 1 / 1024, Mi: 1, Gi: 1024, k: 1e3 / 1048576, M: 1e6 / 1048576, G: 1e9 / 1048576 };
        return Number(m[1]) * (m[2] ? f[m[2]] : 1 / 1048576);
}

/* [what, ok] for each property; `privileged` for the deploy/gpu-privileged rendering */
function daemonSetProperties(ds, configMaps, { privileged = false } = {}) {
        const out = [];
        const check = (what, fn) => {
                let ok;
                try {
                        ok = !!fn();
                } catch {
                        ok = false;
                }
                out.push([what, ok]);
        };
        const pod = ((ds.spec || {}).template || {}).spec || {};
        const c = (pod.containers || [])[0] || {};
        const sc = c.securityContext || {};
        const mounts = c.volumeMounts || [];
        const volumes = pod.volumes || [];
        const volume = (name) => volumes.find((v) => v.name === name) || {};

        check('namespace kube-system', () => ds.metadata.namespace === 'kube-system');
        check('priorityClassName system-node-critical', () => pod.priorityClassName === 'system-node-critical');
        check('hostNetwork: true (uevents reach only the host network namespace)', () => pod.hostNetwork === true);
        for (const key of GPU_TAINTS)
                check(`tolerates ${key}:NoSchedule`, () => pod.tolerations.some((t) =>
                        t.key === key && t.operator === 'Exists' && t.effect === 'NoSchedule'));
        const terms = pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
        for (const label of NFD_LABELS)
                check(`node affinity: a term of its own for ${label.replace(/^.*\//, '')}=true`, () => terms.some((t) =>
                        t.matchExpressions.length === 1 && !t.matchFields && t.matchExpressions[0].key === label &&
                        t.matchExpressions[0].operator === 'In' && t.matchExpressions[0].values.join() === 'true'));
        check('container args: --backend gpu --config /etc/kdp/config.yaml --proc-root /host/proc', () => {
                const a = (c.args || []).join(' ');
                return / ?--backend gpu( |$)/.test(a) && / ?--config \/etc\/kdp\/config\.yaml( |$)/.test(a) &&
                        / ?--proc-root \/host\/proc( |$)/.test(a);
        });
        for (const [host, at, ro] of HOST_MOUNTS)
                check(`mounts hostPath ${host} at ${at}${ro ? ' read-only' : ' writable'}`, () => mounts.some((m) =>
                        m.mountPath === at && !m.subPath && !!m.readOnly === ro &&
                        volume(m.name).hostPath && volume(m.name).hostPath.path === host));
        check('no mount inside /proc (runc refuses them)', () =>
                mounts.every((m) => m.mountPath !== '/proc' && !m.mountPath.startsWith('/proc/')));
        check('no hostPath /sys (readOnly would not cover its cgroup/debugfs submounts)', () =>
                volumes.every((v) => !v.hostPath || !/^\/sys\/?$/.test(v.hostPath.path)));
        check('terminationMessagePath outside the read-only host /dev', () =>
                c.terminationMessagePath && !c.terminationMessagePath.startsWith('/dev/'));
        if (privileged) {
                check('privileged: true (the device cgroup lets only it open /dev/kmsg)', () => sc.privileged === true);
                check('allowPrivilegeEscalation not false (the API refuses it with privileged)', () =>
                        sc.allowPrivilegeEscalation !== false);
        } else {
                check('not privileged', () => sc.privileged !== true);
                check('allowPrivilegeEscalation: false', () => sc.allowPrivilegeEscalation === false);
                check('capabilities: drop ALL, add none', () =>
                        sc.capabilities.drop.includes('ALL') && (sc.capabilities.add || []).length === 0);
        }
        check('readOnlyRootFilesystem: true', () => sc.readOnlyRootFilesystem === true);
        check('runAsUser: 0 (writes into the root-owned kubelet directory)', () => sc.runAsUser === 0);
        check('resources: cpu and memory requests, memory limit >= request', () => {
                const r = c.resources;
                return r.requests.cpu && r.requests.memory && r.limits.memory &&
                        mebibytes(r.requests.memory) <= mebibytes(r.limits.memory);
        });
        check('config: ConfigMap with a config.yaml holding a gpu: section, mounted at /etc/kdp', () => {
                const m = mounts.find((x) => x.mountPath === '/etc/kdp');
                const cm = configMaps.find((x) => x.metadata.name === volume(m.name).configMap.name &&
                        x.metadata.namespace === ds.metadata.namespace);
                const cfg = parseYaml(cm.data['config.yaml']);
                if (cfg.length !== 1 || cfg[0].errors.length || !cfg[0].value || !('gpu' in cfg[0].value))
                        return false;
                const gpu = cfg[0].value.gpu;
                return gpu === null || (typeof gpu === 'object' && !Array.isArray(gpu) &&
                        Object.values(gpu).every((v) => v === null || typeof v !== 'object'));
        });
        return out;
}

// ---- main --------------------------------------------------------------------------------------

function main() {
        const src = path.resolve(process.argv[2] || path.join(__dirname, '..', '..'));
        const deploy = path.join(src, 'deploy');
        const all = [];         // { label, value } of every valid document

        // 1. every document under deploy/
        for (const file of walk(deploy)) {
                const rel = path.relative(src, file);
                for (const d of readDocs(file, rel)) {
                        if (d.errors.length) {
                                report(false, `${d.label}: YAML`, d.errors);
                                continue;
                        }
                        if (isKustomization(d.value)) {
                                let objs;
                                try {
                                        objs = renderKustomization(path.dirname(file));
                                } catch (e) {
                                        report(false, `${d.label}: kustomize`, [e.message]);
                                        continue;
                                }
                                for (const o of objs) {
                                        const errs = schemaErrors(o);
                                        if (report(errs.length === 0, `${d.label} -> ${describe(o)}`, errs.map(formatError)))
                                                all.push({ label: `${d.label} -> ${describe(o)}`, value: o });
                                }
                                continue;
                        }
                        const errs = schemaErrors(d.value);
                        if (report(errs.length === 0, `${d.label}: ${describe(d.value)}`, errs.map(formatError)))
                                all.push({ label: d.label, value: d.value });
                }
        }
        report(closedObjects > 0, `schemas closed to unknown fields: ${closedObjects} object types`);

        // 2. the required properties
        const fromFile = (rel) => all.filter((d) => d.label === rel || d.label.startsWith(`${rel}#`)).map((d) => d.value);
        const configMaps = all.map((d) => d.value).filter((o) => o.kind === 'ConfigMap');
        const base = fromFile('deploy/gpu/daemonset.yaml').find((o) => o.kind === 'DaemonSet');
        if (report(!!base, 'deploy/gpu/daemonset.yaml holds the GPU DaemonSet'))
                for (const [what, ok] of daemonSetProperties(base, configMaps))
                        report(ok, `gpu DaemonSet: ${what}`);
        const priv = all.find((d) => d.label.startsWith('deploy/gpu-privileged/kustomization.yaml -> ') &&
                d.value.kind === 'DaemonSet');
        if (report(!!priv, 'deploy/gpu-privileged renders the GPU DaemonSet')) {
                for (const [what, ok] of daemonSetProperties(priv.value, configMaps, { privileged: true }))
                        report(ok, `gpu-privileged DaemonSet: ${what}`);
                const strip = (o) => {
                        const c = JSON.parse(JSON.stringify(o));
                        delete c.spec.template.spec.containers[0].securityContext;
                        return JSON.stringify(c);
                };
                report(base && strip(base) === strip(priv.value),
                        'gpu-privileged DaemonSet: differs from deploy/gpu only in the container securityContext');
        }
        const pod = fromFile('deploy/gpu/pod-example.yaml').find((o) => o.kind === 'Pod');
        report(!!pod && pod.spec.containers.some((c) => c.resources && c.resources.limits &&
                String(c.resources.limits['nvidia.com/gpu']) === '1'),
               'deploy/gpu/pod-example.yaml: a Pod with limits nvidia.com/gpu: 1');

        // 3. the validator must reject what is broken
        const badDir = path.join(__dirname, 'bad');
        for (const file of walk(badDir)) {
                for (const d of readDocs(file, path.relative(src, file))) {
                        const expect = d.value && d.value.metadata && d.value.metadata.annotations &&
                                d.value.metadata.annotations['kdp.test/expect'];
                        if (d.errors.length || typeof expect !== 'string') {
                                report(false, `${d.label}: needs a kdp.test/expect annotation`, d.errors);
                                continue;
                        }
                        const [keyword, where, detail] = expect.split(/\s+/);
                        const errs = schemaErrors(d.value);
                        const hit = errs.some((e) => e.keyword === keyword && (e.instancePath || '/') === where &&
                                (detail === undefined || JSON.stringify(e.params || {}).includes(detail) ||
                                 (e.message || '').includes(detail)));
                        report(hit, `${d.label}: rejected (${expect})`,
                               errs.length ? errs.map(formatError) : ['the validator accepted it']);
                }
        }
        if (base) {
                const broken = [
                        ['privileged: true', (ds) => { ds.spec.template.spec.containers[0].securityContext.privileged = true; }],
                        ['no hostNetwork', (ds) => { delete ds.spec.template.spec.hostNetwork; }],
                        ['/proc/driver/nvidia mounted', (ds) => {
                                ds.spec.template.spec.volumes.push({ name: 'nv', hostPath: { path: '/proc/driver/nvidia' } });
                                ds.spec.template.spec.containers[0].volumeMounts.push({ name: 'nv', mountPath: '/proc/driver/nvidia', readOnly: true });
                        }],
                        ['/dev writable', (ds) => {
                                ds.spec.template.spec.containers[0].volumeMounts.find((m) => m.mountPath === '/dev').readOnly = false;
                        }],
                        ['no memory limit', (ds) => { delete ds.spec.template.spec.containers[0].resources.limits; }],
                ];
                for (const [what, mutate] of broken) {
                        const ds = JSON.parse(JSON.stringify(base));
                        mutate(ds);
                        const failing = daemonSetProperties(ds, configMaps).filter(([, ok]) => !ok).map(([w]) => w);
                        report(failing.length > 0, `property checks reject a DaemonSet with ${what}`,
                               ['every property check passed']);
                }
        }

        console.log(`${passed} passed, ${failed} failed`);
        return failed === 0 ? 0 : 1;
}

process.exitCode = main();
