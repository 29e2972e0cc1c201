#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * Validates every YAML document under deploy/ against the Kubernetes API
 * schema, offline, then checks the properties the GPU and SR-IOV DaemonSets
 * must have, and the SR-IOV example network and pod.
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
 * patches) and the objects they produce are validated as well; when kubectl is
 * installed, `kubectl kustomize` must render the same objects. The one CRD kind
 * deploy/ uses, Multus's NetworkAttachmentDefinition, is checked against its
 * CRD's schema (CUSTOM_KINDS).
 *
 * Then tests/deploy/bad/: each document there is broken on purpose and says,
 * in its kdp.test/expect annotation, which error it must get ("KEYWORD PATH
 * [DETAIL]"). A validator that let any of them through fails this test. The
 * property checks are run against broken copies of the DaemonSets as well.
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

/*
 * Kinds of CRDs that deploy/ uses, with the schema their CRD declares (closed like the others as
 * it is registered): Multus's NetworkAttachmentDefinition, as
 * k8snetworkplumbingwg/network-attachment-definition-client's artifacts/networks-crd.yaml
 * defines it (status left out: nobody writes it in a manifest).
 */
const CUSTOM_KINDS = {
        'k8s.cni.cncf.io/v1 NetworkAttachmentDefinition': {
                type: 'object',
                required: ['apiVersion', 'kind', 'spec'],
                properties: {
                        apiVersion: { type: 'string', enum: ['k8s.cni.cncf.io/v1'] },
                        kind: { type: 'string', enum: ['NetworkAttachmentDefinition'] },
                        metadata: { $ref: 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta#' },
                        spec: { type: 'object', required: ['config'], properties: { config: { type: 'string' } } },
                },
        },
};

/* a model-like { validate() } for a kind of CUSTOM_KINDS, null for any other */
function customModelFor(apiVersion, kind) {
        const schema = CUSTOM_KINDS[`${apiVersion} ${kind}`];
        if (!schema)
                return null;
        require('@kubernetes-models/apimachinery/_schemas/IoK8sApimachineryPkgApisMetaV1ObjectMeta').addSchema();
        const id = `kdp.test.${apiVersion.replace(/\//g, '.')}.${kind}`;
        kv.register(id, JSON.parse(JSON.stringify(schema)));
        return function (obj) {
                this.validate = () => kv.validate(id, obj);
        };
}

/* [] when `obj` is a valid object of its apiVersion and kind, else ajv-style errors */
function schemaErrors(obj) {
        if (!obj || typeof obj !== 'object' || Array.isArray(obj))
                return [{ keyword: 'type', instancePath: '', message: 'a document must be a mapping' }];
        const M = modelFor(obj.apiVersion, obj.kind) || customModelFor(obj.apiVersion, obj.kind);
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

// ---- the properties the DaemonSets must have ---------------------------------------------------

const GPU_NFD_LABELS = ['pci-0302_10de', 'pci-0300_10de', 'pci-0380_1002', 'pci-1200_1002', 'pci-0380_8086', 'pci-0300_8086']
        .map((l) => `feature.node.kubernetes.io/${l}.present`);
const GPU_TAINTS = ['nvidia.com/gpu', 'amd.com/gpu', 'gpu.intel.com/i915'];
const GPU_HOST_MOUNTS = [       // hostPath, its type, where it is mounted, read-only?
        ['/var/lib/kubelet/device-plugins', 'Directory', '/var/lib/kubelet/device-plugins', false],
        ['/dev', 'Directory', '/dev', true],
        ['/run/udev', 'DirectoryOrCreate', '/run/udev', true],
        ['/var/run/cdi', 'DirectoryOrCreate', '/var/run/cdi', false],
        ['/proc/driver', 'Directory', '/host/proc/driver', true],
];
const SRIOV_NFD_LABEL = 'feature.node.kubernetes.io/network-sriov.capable';
const SRIOV_ARGS = ['--backend', 'sriov', '-o', 'sriov.config_file=/etc/pcidp/config.json',
        '-o', 'sriov.resource_prefix=intel.com', '--state-dir', '/run/kdp'];
const SRIOV_HOST_MOUNTS = [
        ['/var/lib/kubelet/device-plugins', 'Directory', '/var/lib/kubelet/device-plugins', false],
        ['/dev', 'Directory', '/dev', true],
        ['/run/udev', 'DirectoryOrCreate', '/run/udev', true],
        ['/var/run/k8s.cni.cncf.io/devinfo/dp', 'DirectoryOrCreate', '/var/run/k8s.cni.cncf.io/devinfo/dp', false],
        ['/var/lib/kubelet/pod-resources', 'Directory', '/var/lib/kubelet/pod-resources', true],
];
const FPGA_NFD_LABELS = ['pci-1200_8086', 'pci-1200_10ee'].map((l) => `feature.node.kubernetes.io/${l}.present`);
const FPGA_HOST_MOUNTS = GPU_HOST_MOUNTS.filter(([host]) => host !== '/proc/driver');
/* the resources of deploy/sriov/configmap.yaml's pools, in file order */
const SRIOV_RESOURCES = ['intel.com/e810_netdevice', 'intel.com/e810_vfio', 'nvidia.com/cx6_rdma'];

function mebibytes(q) {
        const m = /^([0-9.]+)(Ki|Mi|Gi|k|M|G)?$/.exec(String(q));
        if (!m)
                return NaN;
        const f = { Ki: 1 / 1024, Mi: 1, Gi: 1024, k: 1e3 / 1048576, M: 1e6 / 1048576, G: 1e9 / 1048576 };
        return Number(m[1]) * (m[2] ? f[m[2]] : 1 / 1048576);
}

/* [list, check]: check(what, fn) appends [what, ok] to list, fn() throwing counting as false */
function checklist() {
        const out = [];
        return [out, (what, fn) => {
                let ok;
                try {
                        ok = !!fn();
                } catch {
                        ok = false;
                }
                out.push([what, ok]);
        }];
}

/* what the checks read of a DaemonSet's pod and its one container */
function podOf(ds) {
        const pod = ((ds.spec || {}).template || {}).spec || {};
        const c = (pod.containers || [])[0] || {};
        const volumes = pod.volumes || [];
        return { pod, c, sc: c.securityContext || {}, mounts: c.volumeMounts || [], volumes,
                 volume: (name) => volumes.find((v) => v.name === name) || {} };
}

/* the value after `flag` in args (the last one when repeated) */
function argValue(args, flag) {
        const i = (args || []).lastIndexOf(flag);
        return i >= 0 ? args[i + 1] : undefined;
}

/* the value of -o KEY=VALUE in args */
function optionValue(args, key) {
        const o = (args || []).filter((a, i) => i > 0 && args[i - 1] === '-o' && a.startsWith(`${key}=`)).pop();
        return o === undefined ? undefined : o.slice(key.length + 1);
}

/*
 * What every kdpd DaemonSet has: in kube-system at critical priority, in the host's network,
 * hostPaths `hostMounts` mounted as listed, nothing inside /proc, no host /sys, and a hardened
 * container with requests and a memory limit.
 */
function commonProperties(check, ds, hostMounts, { privileged = false } = {}) {
        const { pod, c, sc, mounts, volumes, volume } = podOf(ds);

        check('namespace kube-system', () => ds.metadata.namespace === 'kube-system');
        check('priorityClassName system-node-critical', () => pod.priorityClassName === 'system-node-critical');
        check('hostNetwork: true (uevents reach only the host network namespace)', () => pod.hostNetwork === true);
        for (const [host, type, at, ro] of hostMounts)
                check(`mounts hostPath ${host} (${type}) at ${at}${ro ? ' read-only' : ' writable'}`, () => mounts.some((m) =>
                        m.mountPath === at && !m.subPath && !!m.readOnly === ro && volume(m.name).hostPath &&
                        volume(m.name).hostPath.path === host && volume(m.name).hostPath.type === type));
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
        check('state dir: --state-dir is an emptyDir of the pod (the root filesystem is read-only)', () =>
                mounts.some((m) => m.mountPath === argValue(c.args || [], '--state-dir') && volume(m.name).emptyDir));
        check('runAsUser: 0 (writes into the root-owned kubelet directory)', () => sc.runAsUser === 0);
        check('resources: cpu and memory requests, memory limit >= request', () => {
                const r = c.resources;
                return r.requests.cpu && r.requests.memory && r.limits.memory &&
                        mebibytes(r.requests.memory) <= mebibytes(r.limits.memory);
        });
}

/* [what, ok] for each property of the GPU DaemonSet; `privileged` for the deploy/gpu-privileged rendering */
function gpuProperties(ds, configMaps, { privileged = false } = {}) {
        const [out, check] = checklist();
        const { pod, c, mounts, volume } = podOf(ds);

        commonProperties(check, ds, GPU_HOST_MOUNTS, { privileged });
        for (const key of GPU_TAINTS)
                check(`tolerates ${key}:NoSchedule`, () => pod.tolerations.some((t) =>
                        t.key === key && t.operator === 'Exists' && t.effect === 'NoSchedule'));
        const terms = () => pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
        for (const label of GPU_NFD_LABELS)
                check(`node affinity: a term of its own for ${label.replace(/^.*\//, '')}=true`, () => terms().some((t) =>
                        t.matchExpressions.length === 1 && !t.matchFields && t.matchExpressions[0].key === label &&
                        t.matchExpressions[0].operator === 'In' && t.matchExpressions[0].values.join() === 'true'));
        check('container args: --backend gpu --config /etc/kdp/config.yaml --proc-root /host/proc', () => {
                const a = (c.args || []).join(' ');
                return / ?--backend gpu( |$)/.test(a) && / ?--config \/etc\/kdp\/config\.yaml( |$)/.test(a) &&
                        / ?--proc-root \/host\/proc( |$)/.test(a);
        });
        check('env: NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility (NVML from NVIDIA\'s container toolkit)',
                () => JSON.stringify((c.env || []).map((e) => [e.name, e.value])) ===
                        JSON.stringify([['NVIDIA_VISIBLE_DEVICES', 'all'], ['NVIDIA_DRIVER_CAPABILITIES', 'utility']]));
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

/*
 * [what, ok] for each property of an FPGA DaemonSet; `mode` is what its ConfigMap's fpga.mode
 * must be (deploy/fpga: af, deploy/fpga-region: region).
 */
function fpgaProperties(ds, configMaps, mode) {
        const [out, check] = checklist();
        const { pod, c, mounts, volume } = podOf(ds);

        commonProperties(check, ds, FPGA_HOST_MOUNTS);
        const terms = () => pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
        for (const label of FPGA_NFD_LABELS)
                check(`node affinity: a term of its own for ${label.replace(/^.*\//, '')}=true`, () => terms().some((t) =>
                        t.matchExpressions.length === 1 && !t.matchFields && t.matchExpressions[0].key === label &&
                        t.matchExpressions[0].operator === 'In' && t.matchExpressions[0].values.join() === 'true'));
        check('container args: --backend fpga --config /etc/kdp/config.yaml', () => {
                const a = (c.args || []).join(' ');
                return / ?--backend fpga( |$)/.test(a) && / ?--config \/etc\/kdp\/config\.yaml( |$)/.test(a);
        });
        check(`config: ConfigMap with a config.yaml whose fpga: section has mode ${mode}, mounted at /etc/kdp`, () => {
                const m = mounts.find((x) => x.mountPath === '/etc/kdp');
                const cm = configMaps.find((x) => x.metadata.name === volume(m.name).configMap.name &&
                        x.metadata.namespace === ds.metadata.namespace);
                const cfg = parseYaml(cm.data['config.yaml']);
                if (cfg.length !== 1 || cfg[0].errors.length || !cfg[0].value || !cfg[0].value.fpga)
                        return false;
                const fpga = cfg[0].value.fpga;
                return typeof fpga === 'object' && !Array.isArray(fpga) && fpga.mode === mode &&
                        Object.values(fpga).every((v) => v === null || typeof v !== 'object');
        });
        return out;
}

/* the resources a sriovdp config.json declares: resourcePrefix (else `prefix`)/resourceName, in file order */
function sriovResources(json, prefix) {
        return JSON.parse(json).resourceList.map((r) => `${r.resourcePrefix || prefix}/${r.resourceName}`);
}

/* [what, ok] for each property of the SR-IOV DaemonSet */
function sriovProperties(ds, configMaps) {
        const [out, check] = checklist();
        const { pod, c, mounts, volume } = podOf(ds);
        const args = c.args || [];
        const configFile = optionValue(args, 'sriov.config_file') || '';
        const configMount = () => mounts.find((m) => m.mountPath === path.posix.dirname(configFile));
        const configMap = () => configMaps.find((x) => x.metadata.name === volume(configMount().name).configMap.name &&
                x.metadata.namespace === ds.metadata.namespace);

        commonProperties(check, ds, SRIOV_HOST_MOUNTS);
        check('tolerates every NoSchedule taint (a toleration without key, Exists, NoSchedule)', () =>
                pod.tolerations.some((t) => t.key === undefined && t.operator === 'Exists' && t.effect === 'NoSchedule'));
        check('tolerates no NoExecute taint of any key (every keyless toleration is NoSchedule only)', () =>
                pod.tolerations.every((t) => t.key !== undefined || t.effect === 'NoSchedule'));
        check(`node affinity: exactly one term, ${SRIOV_NFD_LABEL.replace(/^.*\//, '')}=true`, () => {
                const terms = pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
                const e = terms[0].matchExpressions;
                return terms.length === 1 && !terms[0].matchFields && e.length === 1 && e[0].key === SRIOV_NFD_LABEL &&
                        e[0].operator === 'In' && e[0].values.join() === 'true';
        });
        check(`container args: ${SRIOV_ARGS.join(' ')}`, () => JSON.stringify(args) === JSON.stringify(SRIOV_ARGS));
        check('no subPath mount (a subPath never sees a ConfigMap update)', () => mounts.every((m) => !m.subPath));
        check('config: sriov.config_file is config.json in a ConfigMap mounted whole, read-only, at its directory', () => {
                const m = configMount();
                const v = volume(m.name).configMap;
                return path.posix.basename(configFile) === 'config.json' && m.readOnly === true && !m.subPath &&
                        !v.items && typeof configMap().data['config.json'] === 'string';
        });
        check(`config: config.json declares exactly ${SRIOV_RESOURCES.join(', ')}`, () =>
                JSON.stringify(sriovResources(configMap().data['config.json'],
                        optionValue(args, 'sriov.resource_prefix') || 'intel.com')) === JSON.stringify(SRIOV_RESOURCES));
        check('/var/run/cdi mounted writable exactly when sriov.cdi is true', () =>
                (optionValue(args, 'sriov.cdi') === 'true') === mounts.some((m) => m.mountPath === '/var/run/cdi' &&
                        !m.readOnly && volume(m.name).hostPath && volume(m.name).hostPath.path === '/var/run/cdi'));
        return out;
}

/*
 * deploy/sriov/pod-example.yaml: a NetworkAttachmentDefinition of the SR-IOV CNI whose
 * resourceName annotation names a pool of the ConfigMap, and a Pod that asks for that network
 * and for one device of that resource under limits (what Multus's webhook would add).
 */
function sriovExampleChecks(docs) {
        const nad = docs.find((o) => o.kind === 'NetworkAttachmentDefinition') || { metadata: {} };
        const pod = docs.find((o) => o.kind === 'Pod') || { metadata: {} };
        const resource = (nad.metadata.annotations || {})['k8s.v1.cni.cncf.io/resourceName'];
        const check = (ok, what) => report(ok, `deploy/sriov/pod-example.yaml: ${what}`);
        let cni = {};
        try {
                cni = JSON.parse(nad.spec.config);
        } catch {
                cni = {};
        }
        check(resource === SRIOV_RESOURCES[0], `the NetworkAttachmentDefinition's resourceName is ${SRIOV_RESOURCES[0]}`);
        check(cni.type === 'sriov' && cni.name === nad.metadata.name && typeof cni.cniVersion === 'string',
              'its config is JSON for the SR-IOV CNI ("type": "sriov"), named as the object');
        check((pod.metadata.annotations || {})['k8s.v1.cni.cncf.io/networks'] === nad.metadata.name,
              'the Pod asks for that network (k8s.v1.cni.cncf.io/networks)');
        check(!!pod.spec && pod.spec.containers.length === 1 && String(pod.spec.containers[0].resources.limits[resource]) === '1',
              `the Pod has limits ${resource}: 1`);
}

/* an object with its keys sorted, for comparing two renderings */
function canonical(v) {
        if (Array.isArray(v))
                return v.map(canonical);
        if (v && typeof v === 'object')
                return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
        return v;
}

/*
 * When kubectl is installed: `kubectl kustomize DIR` renders each kustomization under deploy/ to
 * exactly the objects renderKustomization() gave (in any order).
 */
function renderedByKubectl(src, all) {
        const { spawnSync } = require('child_process');
        const dirs = [...new Set(all.filter((d) => / -> /.test(d.label)).map((d) => d.label.split(' -> ')[0]))];
        if (spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status !== 0) {
                console.log('skip kubectl kustomize: kubectl is not installed');
                return;
        }
        const key = (o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
        for (const label of dirs) {
                const dir = path.dirname(path.join(src, label));
                const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
                const ours = all.filter((d) => d.label.startsWith(`${label} -> `)).map((d) => d.value);
                let theirs = [];
                if (r.status === 0)
                        theirs = parseYaml(r.stdout).filter((d) => d.value != null).map((d) => d.value);
                const same = r.status === 0 && theirs.length === ours.length && ours.every((o) => {
                        const t = theirs.find((x) => key(x) === key(o));
                        return t && JSON.stringify(canonical(t)) === JSON.stringify(canonical(o));
                });
                report(same, `${label}: kubectl kustomize renders the same objects`,
                       r.status === 0 ? theirs.map(key) : [r.stderr.trim()]);
        }
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
                for (const [what, ok] of gpuProperties(base, configMaps))
                        report(ok, `gpu DaemonSet: ${what}`);
        const priv = all.find((d) => d.label.startsWith('deploy/gpu-privileged/kustomization.yaml -> ') &&
                d.value.kind === 'DaemonSet');
        if (report(!!priv, 'deploy/gpu-privileged renders the GPU DaemonSet')) {
                for (const [what, ok] of gpuProperties(priv.value, configMaps, { privileged: true }))
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
        const sriov = fromFile('deploy/sriov/daemonset.yaml').find((o) => o.kind === 'DaemonSet');
        if (report(!!sriov, 'deploy/sriov/daemonset.yaml holds the SR-IOV DaemonSet'))
                for (const [what, ok] of sriovProperties(sriov, configMaps))
                        report(ok, `sriov DaemonSet: ${what}`);
        sriovExampleChecks(fromFile('deploy/sriov/pod-example.yaml'));
        for (const [dir, mode] of [['fpga', 'af'], ['fpga-region', 'region']]) {
                const rendered = all.filter((d) => d.label.startsWith(`deploy/${dir}/kustomization.yaml -> `))
                        .map((d) => d.value);
                const ds = rendered.find((o) => o.kind === 'DaemonSet');
                if (report(!!ds, `deploy/${dir} renders the FPGA DaemonSet`))
                        for (const [what, ok] of fpgaProperties(ds, rendered.filter((o) => o.kind === 'ConfigMap'), mode))
                                report(ok, `${dir} DaemonSet: ${what}`);
        }
        const fpgaPod = fromFile('deploy/fpga/pod-example.yaml').find((o) => o.kind === 'Pod');
        report(!!fpgaPod && fpgaPod.spec.containers.some((c) => c.resources && c.resources.limits && String(
                c.resources.limits['fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs']) === '1'),
               'deploy/fpga/pod-example.yaml: a Pod with a limit of 1 D5005 port carrying NLB0');
        renderedByKubectl(src, all);

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
                        const failing = gpuProperties(ds, configMaps).filter(([, ok]) => !ok).map(([w]) => w);
                        report(failing.length > 0, `property checks reject a DaemonSet with ${what}`,
                               ['every property check passed']);
                }
        }
        if (sriov) {
                const spec = (ds) => ds.spec.template.spec;
                const mount = (ds, at) => spec(ds).containers[0].volumeMounts.find((m) => m.mountPath === at);
                const broken = [   // what is broken, how, the checks that must fail (exactly those)
                        ['privileged: true', (ds) => { spec(ds).containers[0].securityContext.privileged = true; },
                         ['not privileged']],
                        ['no hostNetwork', (ds) => { delete spec(ds).hostNetwork; },
                         ['hostNetwork: true (uevents reach only the host network namespace)']],
                        ['config.json mounted through subPath', (ds) => {
                                Object.assign(mount(ds, '/etc/pcidp'), { mountPath: '/etc/pcidp/config.json', subPath: 'config.json' });
                        }, ['no subPath mount (a subPath never sees a ConfigMap update)',
                            'config: sriov.config_file is config.json in a ConfigMap mounted whole, read-only, at its directory',
                            `config: config.json declares exactly ${SRIOV_RESOURCES.join(', ')}`]],
                        ['no device-info directory', (ds) => {
                                spec(ds).containers[0].volumeMounts = spec(ds).containers[0].volumeMounts.filter((m) =>
                                        m.name !== 'devinfo');
                        }, ['mounts hostPath /var/run/k8s.cni.cncf.io/devinfo/dp (DirectoryOrCreate) at /var/run/k8s.cni.cncf.io/devinfo/dp writable']],
                        ['the host /sys mounted', (ds) => {
                                spec(ds).volumes.push({ name: 'sys', hostPath: { path: '/sys', type: 'Directory' } });
                                spec(ds).containers[0].volumeMounts.push({ name: 'sys', mountPath: '/sys', readOnly: true });
                        }, ['no hostPath /sys (readOnly would not cover its cgroup/debugfs submounts)']],
                        ['sriov.cdi=true without /var/run/cdi', (ds) => { spec(ds).containers[0].args.push('-o', 'sriov.cdi=true'); },
                         [`container args: ${SRIOV_ARGS.join(' ')}`, '/var/run/cdi mounted writable exactly when sriov.cdi is true']],
                        ['a toleration of every NoExecute taint', (ds) => { spec(ds).tolerations.push({ operator: 'Exists' }); },
                         ['tolerates no NoExecute taint of any key (every keyless toleration is NoSchedule only)']],
                        ['a pool renamed in the ConfigMap', null,
                         [`config: config.json declares exactly ${SRIOV_RESOURCES.join(', ')}`]],
                ];
                for (const [what, mutate, want] of broken) {
                        const ds = JSON.parse(JSON.stringify(sriov));
                        let cms = configMaps;
                        if (mutate)
                                mutate(ds);
                        else
                                cms = configMaps.map((cm) => cm.metadata.name !== 'kdp-sriov-config' ? cm : {
                                        ...cm, data: { 'config.json': cm.data['config.json'].replace('"e810_vfio"', '"e810_dpdk"') } });
                        const failing = sriovProperties(ds, cms).filter(([, ok]) => !ok).map(([w]) => w);
                        report(JSON.stringify(failing) === JSON.stringify(want),
                               `SR-IOV property checks reject a DaemonSet with ${what}`,
                               [`failed: ${JSON.stringify(failing)}`, `expected: ${JSON.stringify(want)}`]);
                }
        }

        console.log(`${passed} passed, ${failed} failed`);
        return failed === 0 ? 0 : 1;
}

if (require.main === module)
        process.exitCode = main();
module.exports = { parseYaml, renderKustomization, argValue, optionValue };
