#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0-or-later
'use strict';
/*
 * Renders every kustomization under deploy/ with `kubectl kustomize` and
 * validates what it renders, and every other YAML document there, against the
 * Kubernetes API schema, offline; then checks the properties each DaemonSet
 * must have, what each overlay changes of what it builds on, and the example
 * pods and network. Not deploy/helm: the chart's files are Helm's (its templates are no YAML
 * before rendering), and deploy/helm-lint and deploy/helm-template check it.
 *
 *   node tests/deploy/validate.js [SRCDIR]          (ctest: deploy/schema)
 *
 * KDP_KUBECTL names the kubectl to render with (default: kubectl on the PATH). KDP_KUBECTL_ALSO
 * names a second one (kubectl 1.20 beside 1.32, or the other way round) that must render every
 * kustomization byte for byte as the first.
 * The kustomizations keep to what the kustomize inside kubectl 1.20 reads
 * (KUSTOMIZE_V2), so that it and a newer kubectl render them alike: any other
 * field is an error here, whichever kubectl renders.
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
 * (apiErrors). The one CRD kind deploy/ uses, Multus's
 * NetworkAttachmentDefinition, is checked against its CRD's schema
 * (CUSTOM_KINDS).
 *
 * Then tests/deploy/bad/: each document there is broken on purpose and says,
 * in its kdp.test/expect annotation, which error it must get ("KEYWORD PATH
 * [DETAIL]"). A validator that let any of them through fails this test. The
 * property checks are run against broken copies of the DaemonSets as well,
 * and the overlay check against an overlay that changes too much.
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

// ---- kustomize --------------------------------------------------------------------------------

const KUSTOMIZE_API = 'kustomize.config.k8s.io/v1beta1';

/*
 * What a kustomization may hold: the fields the kustomize of kubectl 1.20 (v2.0.3) reads as the
 * newer ones do. Each field's check returns the problems of its value; `dir` is the
 * kustomization's directory.
 */
const isFile = (dir, p) => typeof p === 'string' && fs.existsSync(path.join(dir, p)) &&
        fs.statSync(path.join(dir, p)).isFile();
const isKustomizationDir = (dir, p) => typeof p === 'string' && isFile(path.join(dir, p), 'kustomization.yaml');
const listOf = (what, ok) => (dir, v) => (!Array.isArray(v) ? ['not a list']
        : v.filter((x) => !ok(dir, x)).map((x) => `${JSON.stringify(x)} is not ${what}`));
const keysIn = (o, keys) => o && typeof o === 'object' && !Array.isArray(o) && Object.keys(o).every((k) => keys.includes(k));
const KUSTOMIZE_V2 = {
        apiVersion: (dir, v) => (v === KUSTOMIZE_API ? [] : [`not ${KUSTOMIZE_API}`]),
        kind: (dir, v) => (v === 'Kustomization' ? [] : ['not Kustomization']),
        namespace: (dir, v) => (typeof v === 'string' ? [] : ['not a string']),
        commonLabels: (dir, v) => (v && typeof v === 'object' && !Array.isArray(v) &&
                Object.values(v).every((x) => typeof x === 'string') ? [] : ['not a map of strings']),
        images: listOf('an image (name, newName, newTag, digest)', (dir, x) =>
                keysIn(x, ['name', 'newName', 'newTag', 'digest']) && typeof x.name === 'string'),
        resources: listOf('a file of this directory (v2 takes directories only as bases)', isFile),
        bases: listOf('a directory with a kustomization.yaml', isKustomizationDir),
        patchesStrategicMerge: listOf('a patch file (v2 takes no inline patch)', isFile),
        patchesJson6902: listOf('{target: {group, version, kind, name, namespace}, path: FILE}', (dir, x) =>
                keysIn(x, ['target', 'path']) && keysIn(x.target, ['group', 'version', 'kind', 'name', 'namespace']) &&
                typeof x.target.kind === 'string' && typeof x.target.name === 'string' && isFile(dir, x.path)),
};

/* the problems of kustomization `k` (of directory `dir`) for the kustomize of kubectl 1.20 */
function kustomizeV2Errors(dir, k) {
        if (!k || typeof k !== 'object' || Array.isArray(k))
                return ['not a mapping'];
        return Object.entries(k).flatMap(([key, v]) => (KUSTOMIZE_V2[key]
                ? KUSTOMIZE_V2[key](dir, v).map((e) => `${key}: ${e}`)
                : [`${key}: not read by the kustomize of kubectl 1.20 (v2.0.3)`]));
}

/* the files a kustomization names as its resources and patches, relative to `dir`, resolved */
function kustomizationFiles(dir, k) {
        return [...(k.resources || []), ...(k.patchesStrategicMerge || []), ...(k.patchesJson6902 || []).map((p) => p.path)]
                .filter((p) => typeof p === 'string').map((p) => path.resolve(dir, p));
}

/* the kubectl to render with */
const kubectl = () => process.env.KDP_KUBECTL || 'kubectl';

/* { stdout } of `BIN kustomize DIR`, or { error } */
function kustomizeText(bin, dir) {
        const { spawnSync } = require('child_process');
        const r = spawnSync(bin, ['kustomize', dir], { encoding: 'utf8', maxBuffer: 64 << 20 });
        if (r.error)
                return { error: `${bin}: ${r.error.code === 'ENOENT' ? 'not installed (scripts/install-deps installs it)' : r.error.message}` };
        if (r.status !== 0)
                return { error: `${bin} kustomize: ${(r.stderr || '').split('\n').filter((l) => !l.startsWith('# Warning:')).join('\n').trim()}` };
        return { stdout: r.stdout };
}

/* { objs } of a rendering `r` of kustomizeText(), or { error } */
function renderedObjects(r) {
        if (r.error)
                return r;
        const docs = parseYaml(r.stdout);
        const bad = docs.find((d) => d.errors.length);
        if (bad)
                return { error: `${kubectl()} kustomize printed bad YAML: ${bad.errors[0]}` };
        return { objs: docs.filter((d) => d.value != null).map((d) => d.value) };
}

/* { objs } of what `kubectl kustomize DIR` renders, or { error } */
function kustomize(dir) {
        return renderedObjects(kustomizeText(kubectl(), dir));
}

// ---- the properties the DaemonSets must have ---------------------------------------------------

const GPU_NFD_LABELS = ['pci-0302_10de', 'pci-0300_10de', 'pci-0380_1002', 'pci-1200_1002', 'pci-0380_8086', 'pci-0300_8086']
        .map((l) => `feature.node.kubernetes.io/${l}.present`);
const GPU_TAINTS = ['nvidia.com/gpu', 'amd.com/gpu', 'gpu.intel.com/i915'];
/* hostPath, its type, where it is mounted, read-only? */
const DEVICE_PLUGINS_MOUNT = ['/var/lib/kubelet/device-plugins', 'Directory', '/var/lib/kubelet/device-plugins', false];
/* the kubelet's PodResources socket (kdpctl who; the SR-IOV backend's device-info cleaning): connect() needs no write */
const POD_RESOURCES_MOUNT = ['/var/lib/kubelet/pod-resources', 'Directory', '/var/lib/kubelet/pod-resources', true];
/* the kubelet's plugin watcher directory, mounted unless kdpd registers through kubelet.sock only */
const PLUGINS_REGISTRY = '/var/lib/kubelet/plugins_registry';
const PLUGINS_REGISTRY_MOUNT = [PLUGINS_REGISTRY, 'Directory', PLUGINS_REGISTRY, false];
const GPU_HOST_MOUNTS = [
        DEVICE_PLUGINS_MOUNT,
        ['/dev', 'Directory', '/dev', true],
        ['/run/udev', 'DirectoryOrCreate', '/run/udev', true],
        ['/var/run/cdi', 'DirectoryOrCreate', '/var/run/cdi', false],
        ['/proc/driver', 'Directory', '/host/proc/driver', true],
        POD_RESOURCES_MOUNT,
];
const SRIOV_NFD_LABEL = 'feature.node.kubernetes.io/network-sriov.capable';
/* the SR-IOV DaemonSet's args after --registration and --metrics-address */
const SRIOV_ARGS = ['--backend', 'sriov', '-o', 'sriov.config_file=/etc/pcidp/config.json',
        '-o', 'sriov.resource_prefix=intel.com', '--state-dir', '/run/kdp'];
const SRIOV_ARGS_CHECK = `container args after the first two: ${SRIOV_ARGS.join(' ')}`;
const SRIOV_HOST_MOUNTS = [
        DEVICE_PLUGINS_MOUNT,
        ['/dev', 'Directory', '/dev', true],
        ['/run/udev', 'DirectoryOrCreate', '/run/udev', true],
        ['/var/run/k8s.cni.cncf.io/devinfo/dp', 'DirectoryOrCreate', '/var/run/k8s.cni.cncf.io/devinfo/dp', false],
        POD_RESOURCES_MOUNT,
];
const FPGA_NFD_LABELS = ['pci-1200_8086', 'pci-1200_10ee', 'pci-1200_1c2c'].map((l) => `feature.node.kubernetes.io/${l}.present`);
const FPGA_HOST_MOUNTS = GPU_HOST_MOUNTS.filter(([host]) => host !== '/proc/driver');
const EXAMPLE_HOST_MOUNTS = [DEVICE_PLUGINS_MOUNT, POD_RESOURCES_MOUNT];

/*
 * The metrics endpoint's port of each backend: one each, since the GPU, SR-IOV and FPGA
 * DaemonSets share the node's network and may share a node (9400 is dcgm-exporter's).
 */
const METRICS_PORTS = { 'kdp-gpu': 9464, 'kdp-sriov': 9465, 'kdp-fpga': 9466, 'kdp-example': 9467 };
/* the probes of every kdpd container, exactly (deploy/README.md, "Metrics and probes", has the reasons) */
const PROBES = {
        startupProbe: { httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 1, timeoutSeconds: 5, failureThreshold: 120 },
        readinessProbe: { httpGet: { path: '/readyz', port: 'metrics' }, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 },
        livenessProbe: { httpGet: { path: '/healthz', port: 'metrics' }, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 },
};
/* kdpd's --registration modes, and whether each needs the plugins registry mounted */
const REGISTRATION_NEEDS_REGISTRY = { 'auto': true, 'kubelet-sock': false, 'plugin-watcher': true };
/* the resources of deploy/sriov/base/configmap.yaml's pools, in file order */
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

/* `v` with the keys of every object sorted, for comparing values whatever their key order */
function canonical(v) {
        if (Array.isArray(v))
                return v.map(canonical);
        if (v && typeof v === 'object')
                return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
        return v;
}
const same = (a, b) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/* The names of the checks that broken copies of the DaemonSets must fail, by what they check. */
const CHECK = {
        mount: ([host, type, at, ro]) => `mounts hostPath ${host} (${type}) at ${at}${ro ? ' read-only' : ' writable'}`,
        podIp: 'env POD_IP from the downward API (fieldRef status.podIP), nothing else',
        metricsArg: (port) => `args: --metrics-address=[$(POD_IP)]:${port}, once (the pod's IP, the node's with hostNetwork)`,
        ports: (port, hostNetwork) => `ports: only metrics, ${port}/TCP, ${hostNetwork ? `hostPort ${port} (the API's default with hostNetwork)` : 'no hostPort'}`,
        probe: (kind) => {
                const p = PROBES[kind];
                return `${kind}: GET ${p.httpGet.path} on port metrics every ${p.periodSeconds} s, timeout ` +
                        `${p.timeoutSeconds} s, ${p.failureThreshold} failures, nothing else`;
        },
        registration: (mode) => `args: --registration=${mode} first, once; no --plugins-registry (the mounted path is kdpd's default)`,
        noRegistry: `no mount and no volume of ${PLUGINS_REGISTRY} (kdpd registers through kubelet.sock)`,
        listedOnly: 'no hostPath but those listed',
};

/*
 * The metrics endpoint and the probes: kdpd serves them on the pod's IP (the node's with
 * hostNetwork) from the downward API, at the backend's port, named metrics, which the probes ask.
 */
function metricsProperties(check, ds, hostNetwork) {
        const { c } = podOf(ds);
        const port = METRICS_PORTS[ds.metadata.name];

        check(CHECK.podIp, () => {
                const env = (c.env || []).filter((e) => e.name === 'POD_IP');
                return env.length === 1 && same(env[0], { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
        });
        check(CHECK.metricsArg(port), () => same((c.args || []).filter((a) => /^--metrics-address(=|$)/.test(a)),
                [`--metrics-address=[$(POD_IP)]:${port}`]));
        check(CHECK.ports(port, hostNetwork), () => same(c.ports,
                [{ name: 'metrics', containerPort: port, protocol: 'TCP', ...(hostNetwork ? { hostPort: port } : {}) }]));
        for (const kind of Object.keys(PROBES))
                check(CHECK.probe(kind), () => same(c[kind], PROBES[kind]));
}

/*
 * How kdpd registers (`mode`, --registration): the first arg says it, and the kubelet's plugins
 * registry is mounted exactly when the mode may use it.
 */
function registrationProperties(check, ds, mode) {
        const { c, mounts, volumes } = podOf(ds);
        const args = c.args || [];

        check(CHECK.registration(mode), () => args[0] === `--registration=${mode}` &&
                args.filter((a) => /^--registration(=|$)/.test(a)).length === 1 &&
                !args.some((a) => /^--plugins-registry(=|$)/.test(a)));
        if (!REGISTRATION_NEEDS_REGISTRY[mode])
                check(CHECK.noRegistry, () => mounts.every((m) => m.mountPath !== PLUGINS_REGISTRY) &&
                        volumes.every((v) => !v.hostPath || v.hostPath.path !== PLUGINS_REGISTRY));
}

/*
 * What every kdpd DaemonSet has: in kube-system at critical priority, replaced one node at a time
 * with the old pod gone first, given the time of kdpd's stop timeout, in the host's network
 * (`hostNetwork`: a backend of real devices) or not, hostPaths `hostMounts` mounted as listed
 * (and the plugins registry, when the `registration` mode may use it), nothing inside /proc, no
 * host /sys, a hardened container with requests and a memory limit, the metrics endpoint and the
 * probes.
 */
function commonProperties(check, ds, baseMounts, { privileged = false, hostNetwork = true, registration = 'auto' } = {}) {
        const { pod, c, sc, mounts, volumes, volume } = podOf(ds);
        const hostMounts = REGISTRATION_NEEDS_REGISTRY[registration] ? [...baseMounts, PLUGINS_REGISTRY_MOUNT] : baseMounts;

        check('namespace kube-system', () => ds.metadata.namespace === 'kube-system');
        check('priorityClassName system-node-critical', () => pod.priorityClassName === 'system-node-critical');
        check('rolling update with maxSurge 0, maxUnavailable 1 (never two kdpd of one resource on a node)', () => {
                const u = ds.spec.updateStrategy;
                return u.type === 'RollingUpdate' && String(u.rollingUpdate.maxSurge) === '0' &&
                        String(u.rollingUpdate.maxUnavailable) === '1';
        });
        check('terminationGracePeriodSeconds over kdpd\'s 20 s stop timeout', () => pod.terminationGracePeriodSeconds > 20);
        if (hostNetwork) {
                check('hostNetwork: true (uevents reach only the host network namespace)', () => pod.hostNetwork === true);
                check('terminationMessagePath outside the read-only host /dev', () =>
                        c.terminationMessagePath && !c.terminationMessagePath.startsWith('/dev/'));
        } else {
                check('no hostNetwork (no device and no uevent to read)', () => !pod.hostNetwork);
                check(CHECK.listedOnly, () => volumes.every((v) => !v.hostPath ||
                        hostMounts.some(([host]) => host === v.hostPath.path)));
        }
        for (const [host, type, at, ro] of hostMounts)
                check(CHECK.mount([host, type, at, ro]), () => mounts.some((m) =>
                        m.mountPath === at && !m.subPath && !!m.readOnly === ro && volume(m.name).hostPath &&
                        volume(m.name).hostPath.path === host && volume(m.name).hostPath.type === type));
        check('no mount inside /proc (runc refuses them)', () =>
                mounts.every((m) => m.mountPath !== '/proc' && !m.mountPath.startsWith('/proc/')));
        check('no hostPath /sys (readOnly would not cover its cgroup/debugfs submounts)', () =>
                volumes.every((v) => !v.hostPath || !/^\/sys\/?$/.test(v.hostPath.path)));
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
        check('resources: cpu and memory requests, memory limit >= request, no CPU limit', () => {
                const r = c.resources;
                return r.requests.cpu && r.requests.memory && r.limits.memory && r.limits.cpu === undefined &&
                        mebibytes(r.requests.memory) <= mebibytes(r.limits.memory);
        });
        metricsProperties(check, ds, hostNetwork);
        registrationProperties(check, ds, registration);
}

/*
 * The `name` section of the config file of DaemonSet `ds`: config.yaml of the ConfigMap of its
 * namespace mounted at /etc/kdp, a mapping of scalars (or empty: null). Throws when there is no
 * such file, it is not one YAML document, or the section is missing or holds more than scalars.
 */
function configSection(ds, configMaps, name) {
        const { mounts, volume } = podOf(ds);
        const m = mounts.find((x) => x.mountPath === '/etc/kdp');
        const cm = configMaps.find((x) => x.metadata.name === volume(m.name).configMap.name &&
                x.metadata.namespace === ds.metadata.namespace);
        const cfg = parseYaml(cm.data['config.yaml']);
        if (cfg.length !== 1 || cfg[0].errors.length || !cfg[0].value || !(name in cfg[0].value))
                throw new Error(`no ${name}: section`);
        const section = cfg[0].value[name];
        if (section !== null && (typeof section !== 'object' || Array.isArray(section) ||
            Object.values(section).some((v) => v !== null && typeof v === 'object')))
                throw new Error(`${name}: is not a mapping of scalars`);
        return section;
}

/* a check that `pod` has a node affinity term of its own for each NFD label of `labels` */
function nfdTermChecks(check, pod, labels) {
        const terms = () => pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
        for (const label of labels)
                check(`node affinity: a term of its own for ${label.replace(/^.*\//, '')}=true`, () => terms().some((t) =>
                        t.matchExpressions.length === 1 && !t.matchFields && t.matchExpressions[0].key === label &&
                        t.matchExpressions[0].operator === 'In' && t.matchExpressions[0].values.join() === 'true'));
}

/* a check that container `c` has each of `args` (FLAG VALUE pairs) */
function argChecks(check, c, args) {
        const have = c.args || [];
        check(`container args: ${args.join(' ')}`, () =>
                args.every((a, i) => i % 2 === 1 || have.some((x, j) => x === a && have[j + 1] === args[i + 1])));
}

/*
 * [what, ok] for each property of the GPU DaemonSet; `privileged` for deploy/gpu/privileged,
 * `registration` the --registration mode of its overlay
 */
function gpuProperties(ds, configMaps, { privileged = false, registration = 'auto' } = {}) {
        const [out, check] = checklist();
        const { pod, c } = podOf(ds);

        commonProperties(check, ds, GPU_HOST_MOUNTS, { privileged, registration });
        for (const key of GPU_TAINTS)
                check(`tolerates ${key}:NoSchedule`, () => pod.tolerations.some((t) =>
                        t.key === key && t.operator === 'Exists' && t.effect === 'NoSchedule'));
        nfdTermChecks(check, pod, GPU_NFD_LABELS);
        argChecks(check, c, ['--backend', 'gpu', '--config', '/etc/kdp/config.yaml', '--proc-root', '/host/proc']);
        check('env: NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility (NVML from NVIDIA\'s container toolkit)',
                () => JSON.stringify((c.env || []).filter((e) => e.name !== 'POD_IP').map((e) => [e.name, e.value])) ===
                        JSON.stringify([['NVIDIA_VISIBLE_DEVICES', 'all'], ['NVIDIA_DRIVER_CAPABILITIES', 'utility']]));
        check('config: ConfigMap with a config.yaml holding a gpu: section, mounted at /etc/kdp', () =>
                configSection(ds, configMaps, 'gpu') !== undefined);
        return out;
}

/*
 * [what, ok] for each property of an FPGA DaemonSet; `mode` is what its ConfigMap's fpga.mode
 * must be (deploy/fpga/unprivileged: af, deploy/fpga/region: region), `registration` the
 * --registration mode of its overlay.
 */
function fpgaProperties(ds, configMaps, mode, { registration = 'auto' } = {}) {
        const [out, check] = checklist();
        const { pod, c } = podOf(ds);

        commonProperties(check, ds, FPGA_HOST_MOUNTS, { registration });
        nfdTermChecks(check, pod, FPGA_NFD_LABELS);
        argChecks(check, c, ['--backend', 'fpga', '--config', '/etc/kdp/config.yaml']);
        check(`config: ConfigMap with a config.yaml whose fpga: section has mode ${mode}, mounted at /etc/kdp`, () =>
                (configSection(ds, configMaps, 'fpga') || {}).mode === mode);
        return out;
}

/* [what, ok] for each property of the example DaemonSet; `registration` the --registration mode of its overlay */
function exampleProperties(ds, configMaps, { registration = 'auto' } = {}) {
        const [out, check] = checklist();
        const { pod, c } = podOf(ds);

        commonProperties(check, ds, EXAMPLE_HOST_MOUNTS, { hostNetwork: false, registration });
        check('nodeSelector example.com/widgets=true, alone', () =>
                JSON.stringify(pod.nodeSelector) === JSON.stringify({ 'example.com/widgets': 'true' }));
        argChecks(check, c, ['--backend', 'example', '--config', '/etc/kdp/config.yaml']);
        check('config: ConfigMap with a config.yaml holding an example: section, mounted at /etc/kdp', () =>
                configSection(ds, configMaps, 'example') !== undefined);
        return out;
}

/* the resources a sriovdp config.json declares: resourcePrefix (else `prefix`)/resourceName, in file order */
function sriovResources(json, prefix) {
        return JSON.parse(json).resourceList.map((r) => `${r.resourcePrefix || prefix}/${r.resourceName}`);
}

/* [what, ok] for each property of the SR-IOV DaemonSet; `registration` the --registration mode of its overlay */
function sriovProperties(ds, configMaps, { registration = 'auto' } = {}) {
        const [out, check] = checklist();
        const { pod, c, mounts, volume } = podOf(ds);
        const args = c.args || [];
        const configFile = optionValue(args, 'sriov.config_file') || '';
        const configMount = () => mounts.find((m) => m.mountPath === path.posix.dirname(configFile));
        const configMap = () => configMaps.find((x) => x.metadata.name === volume(configMount().name).configMap.name &&
                x.metadata.namespace === ds.metadata.namespace);

        commonProperties(check, ds, SRIOV_HOST_MOUNTS, { registration });
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
        check(SRIOV_ARGS_CHECK, () => JSON.stringify(args.slice(2)) === JSON.stringify(SRIOV_ARGS));
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

// ---- overlays ---------------------------------------------------------------------------------

const SC = '/spec/template/spec/containers/0/securityContext';
const unprivileged = (ds) => ['allowPrivilegeEscalation', 'capabilities', 'privileged']
        .map((p) => `DaemonSet kube-system/${ds} ${SC}/${p}`);
/*
 * The registration overlays of backend `b` (kdp-`b`), on `b`/unprivileged: kubelet-sock changes the
 * first arg and drops the plugins registry's mount and volume, the last of each (`mount`, `volume`:
 * their indexes); plugin-watcher changes the first arg only.
 */
const registrationOverlays = (b, mount, volume) => {
        const at = (p) => `DaemonSet kube-system/kdp-${b} /spec/template/spec/${p}`;
        return [[`${b}/kubelet-sock`, `${b}/unprivileged`,
                 [at('containers/0/args/0'), at(`containers/0/volumeMounts/${mount}`), at(`volumes/${volume}`)]],
                [`${b}/plugin-watcher`, `${b}/unprivileged`, [at('containers/0/args/0')]]];
};
/* the kustomizations under deploy/ that are bases */
const BASES = ['gpu/base', 'sriov/base', 'fpga/base', 'example/base'];
/* each overlay, what it builds on, and the paths of the objects it renders that differ from those */
const OVERLAYS = [
        ['gpu/unprivileged', 'gpu/base', unprivileged('kdp-gpu')],
        ['gpu/privileged', 'gpu/base', [`DaemonSet kube-system/kdp-gpu ${SC}/privileged`]],
        ...registrationOverlays('gpu', 8, 8),
        ['sriov/unprivileged', 'sriov/base', unprivileged('kdp-sriov')],
        ...registrationOverlays('sriov', 7, 7),
        ['fpga/unprivileged', 'fpga/base', unprivileged('kdp-fpga')],
        ['fpga/region', 'fpga/unprivileged', ['ConfigMap kube-system/kdp-fpga-config /data/config.yaml']],
        ...registrationOverlays('fpga', 7, 7),
        ['example/unprivileged', 'example/base', unprivileged('kdp-example')],
        ...registrationOverlays('example', 4, 4),
];
/* the property checks of the DaemonSet each overlay renders, given it and the ConfigMaps rendered with it */
const PROPERTIES = [
        ['gpu/unprivileged', (ds, cms) => gpuProperties(ds, cms)],
        ['gpu/privileged', (ds, cms) => gpuProperties(ds, cms, { privileged: true })],
        ['gpu/kubelet-sock', (ds, cms) => gpuProperties(ds, cms, { registration: 'kubelet-sock' })],
        ['gpu/plugin-watcher', (ds, cms) => gpuProperties(ds, cms, { registration: 'plugin-watcher' })],
        ['sriov/unprivileged', (ds, cms) => sriovProperties(ds, cms)],
        ['sriov/kubelet-sock', (ds, cms) => sriovProperties(ds, cms, { registration: 'kubelet-sock' })],
        ['sriov/plugin-watcher', (ds, cms) => sriovProperties(ds, cms, { registration: 'plugin-watcher' })],
        ['fpga/unprivileged', (ds, cms) => fpgaProperties(ds, cms, 'af')],
        ['fpga/region', (ds, cms) => fpgaProperties(ds, cms, 'region')],
        ['fpga/kubelet-sock', (ds, cms) => fpgaProperties(ds, cms, 'af', { registration: 'kubelet-sock' })],
        ['fpga/plugin-watcher', (ds, cms) => fpgaProperties(ds, cms, 'af', { registration: 'plugin-watcher' })],
        ['example/unprivileged', (ds, cms) => exampleProperties(ds, cms)],
        ['example/kubelet-sock', (ds, cms) => exampleProperties(ds, cms, { registration: 'kubelet-sock' })],
        ['example/plugin-watcher', (ds, cms) => exampleProperties(ds, cms, { registration: 'plugin-watcher' })],
];

/* the JSON pointers at which `a` and `b` differ, each under `at` */
function diffPaths(a, b, at) {
        if (a === b)
                return [];
        if (!a || !b || typeof a !== 'object' || typeof b !== 'object' || Array.isArray(a) !== Array.isArray(b))
                return [at];
        return [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()
                .flatMap((k) => diffPaths(a[k], b[k], `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
}

/* "KIND NAMESPACE/NAME POINTER" of each value in which rendering `to` differs from rendering `from` */
function renderingDiff(from, to) {
        const key = (o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
        const keys = [...new Set([...from, ...to].map(key))].sort();
        return keys.flatMap((k) => diffPaths(from.find((o) => key(o) === k), to.find((o) => key(o) === k), '')
                .map((p) => (p ? `${k} ${p}` : k)));
}

// ---- the checks against what is broken --------------------------------------------------------

/*
 * The metrics, probe, mount and registration checks catch a DaemonSet that lost or changed any of
 * them: broken copies of what each backend's unprivileged and kubelet-sock overlays render, each
 * failing exactly the checks that name its breakage.
 */
function brokenMetricsAndRegistration(renderings) {
        const properties = new Map(PROPERTIES);
        const c = (ds) => ds.spec.template.spec.containers[0];
        const spec = (ds) => ds.spec.template.spec;
        const dropMount = (at) => (ds) => { c(ds).volumeMounts = c(ds).volumeMounts.filter((m) => m.mountPath !== at); };
        const mountAt = (ds, at) => c(ds).volumeMounts.find((m) => m.mountPath === at);
        const volumeOf = (ds, at) => spec(ds).volumes.find((v) => v.name === mountAt(ds, at).name);
        const metricsArg = (ds) => c(ds).args.findIndex((a) => a.startsWith('--metrics-address'));
        const probe = (kind, what, how) => ['unprivileged', `${kind}: ${what}`, (ds) => how(c(ds)[kind]), [CHECK.probe(kind)]];

        for (const b of ['gpu', 'sriov', 'fpga', 'example']) {
                const name = `kdp-${b}`;
                const port = METRICS_PORTS[name];
                const hostNetwork = b !== 'example';
                const ports = [CHECK.ports(port, hostNetwork)];
                /* a change of the args after the first two also fails SR-IOV's check of its exact args */
                const tail = b === 'sriov' ? [SRIOV_ARGS_CHECK] : [];
                const cases = [   // [dir, what is broken, how, the checks that must fail (exactly those)]
                        ...['livenessProbe', 'readinessProbe', 'startupProbe'].map((kind) =>
                                ['unprivileged', `no ${kind}`, (ds) => { delete c(ds)[kind]; }, [CHECK.probe(kind)]]),
                        probe('livenessProbe', '/readyz (it would kill kdpd while the kubelet restarts)', (p) => { p.httpGet.path = '/readyz'; }),
                        probe('readinessProbe', '/healthz', (p) => { p.httpGet.path = '/healthz'; }),
                        probe('startupProbe', '/healthz (started before the kubelet took it)', (p) => { p.httpGet.path = '/healthz'; }),
                        probe('startupProbe', 'the port by number', (p) => { p.httpGet.port = port; }),
                        probe('livenessProbe', 'failureThreshold 1', (p) => { p.failureThreshold = 1; }),
                        probe('livenessProbe', 'the timeout left at 1 s', (p) => { delete p.timeoutSeconds; }),
                        probe('readinessProbe', 'periodSeconds 1', (p) => { p.periodSeconds = 1; }),
                        probe('startupProbe', 'failureThreshold 10', (p) => { p.failureThreshold = 10; }),
                        probe('startupProbe', 'an initial delay', (p) => { p.initialDelaySeconds = 5; }),
                        ['unprivileged', 'no ports', (ds) => { delete c(ds).ports; }, ports],
                        ['unprivileged', 'the metrics port renamed http', (ds) => { c(ds).ports[0].name = 'http'; }, ports],
                        ['unprivileged', 'the metrics port 9400 (dcgm-exporter\'s)', (ds) => {
                                Object.assign(c(ds).ports[0], { containerPort: 9400 }, hostNetwork ? { hostPort: 9400 } : {});
                        }, ports],
                        hostNetwork ? ['unprivileged', 'no hostPort', (ds) => { delete c(ds).ports[0].hostPort; }, ports]
                                : ['unprivileged', 'a hostPort', (ds) => { c(ds).ports[0].hostPort = port; }, ports],
                        ['unprivileged', 'POD_IP from status.hostIP', (ds) => {
                                c(ds).env.find((e) => e.name === 'POD_IP').valueFrom.fieldRef.fieldPath = 'status.hostIP';
                        }, [CHECK.podIp]],
                        ['unprivileged', 'no POD_IP', (ds) => { c(ds).env = c(ds).env.filter((e) => e.name !== 'POD_IP'); },
                         [CHECK.podIp]],
                        ['unprivileged', 'the metrics endpoint on every address', (ds) => {
                                c(ds).args[metricsArg(ds)] = `--metrics-address=:${port}`;
                        }, [CHECK.metricsArg(port)]],
                        ['unprivileged', 'the pod IP without brackets (an IPv6 one would be refused)', (ds) => {
                                c(ds).args[metricsArg(ds)] = `--metrics-address=$(POD_IP):${port}`;
                        }, [CHECK.metricsArg(port)]],
                        ['unprivileged', 'no --metrics-address', (ds) => { c(ds).args[metricsArg(ds)] = '--v=0'; },
                         [CHECK.metricsArg(port)]],
                        ['unprivileged', 'no pod-resources mount', dropMount(POD_RESOURCES_MOUNT[2]), [CHECK.mount(POD_RESOURCES_MOUNT)]],
                        ['unprivileged', 'pod-resources writable', (ds) => { mountAt(ds, POD_RESOURCES_MOUNT[2]).readOnly = false; },
                         [CHECK.mount(POD_RESOURCES_MOUNT)]],
                        ['unprivileged', 'no plugins registry mount', dropMount(PLUGINS_REGISTRY), [CHECK.mount(PLUGINS_REGISTRY_MOUNT)]],
                        ['unprivileged', 'the plugins registry DirectoryOrCreate (auto would always pick it)', (ds) => {
                                volumeOf(ds, PLUGINS_REGISTRY).hostPath.type = 'DirectoryOrCreate';
                        }, [CHECK.mount(PLUGINS_REGISTRY_MOUNT)]],
                        ['unprivileged', '--registration=kubelet-sock with the plugins registry mounted', (ds) => {
                                c(ds).args[0] = '--registration=kubelet-sock';
                        }, [CHECK.registration('auto')]],
                        ['unprivileged', 'a second --registration', (ds) => { c(ds).args.push('--registration=auto'); },
                         [CHECK.registration('auto'), ...tail]],
                        ['unprivileged', 'a --plugins-registry', (ds) => { c(ds).args.push(`--plugins-registry=${PLUGINS_REGISTRY}`); },
                         [CHECK.registration('auto'), ...tail]],
                        ['kubelet-sock', '--registration=auto', (ds) => { c(ds).args[0] = '--registration=auto'; },
                         [CHECK.registration('kubelet-sock')]],
                        ['kubelet-sock', 'the plugins registry mounted', (ds) => {
                                spec(ds).volumes.push({ name: 'plugins-registry', hostPath: { path: PLUGINS_REGISTRY, type: 'Directory' } });
                                c(ds).volumeMounts.push({ name: 'plugins-registry', mountPath: PLUGINS_REGISTRY });
                        }, [CHECK.noRegistry, ...(hostNetwork ? [] : [CHECK.listedOnly])]],
                ];
                for (const [overlay, what, mutate, want] of cases) {
                        const dir = `${b}/${overlay}`;
                        const ds = (renderings.get(dir) || []).find((o) => o.kind === 'DaemonSet');
                        const cms = (renderings.get(dir) || []).filter((o) => o.kind === 'ConfigMap');
                        if (!report(!!ds, `deploy/${dir} renders a DaemonSet to break`))
                                continue;
                        const broken = JSON.parse(JSON.stringify(ds));
                        try {
                                mutate(broken);
                        } catch (e) {
                                report(false, `property checks reject a deploy/${dir} DaemonSet with ${what}`,
                                       [`it has nothing to break that way: ${e.message}`]);
                                continue;
                        }
                        const failing = properties.get(dir)(broken, cms).filter(([, ok]) => !ok).map(([w]) => w).sort();
                        report(JSON.stringify(failing) === JSON.stringify([...want].sort()),
                               `property checks reject a deploy/${dir} DaemonSet with ${what}`,
                               [`failed: ${JSON.stringify(failing)}`, `expected: ${JSON.stringify(want)}`]);
                }
        }
}

/*
 * Across the DaemonSets: no two share a metrics port (three of them share the node's network),
 * and the registration overlays' patches, copies since a kustomization reads no file outside its
 * directory, stay the same in every backend (but for the DaemonSet's name).
 */
function sharedChecks(deploy, renderings) {
        const ports = BASES.map((b) => (renderings.get(b) || []).filter((o) => o.kind === 'DaemonSet')
                .map((ds) => ((podOf(ds).c.ports || []).find((p) => p.name === 'metrics') || {}).containerPort)[0]);
        report(ports.every((p) => Number.isInteger(p) && p !== 9400) && new Set(ports).size === ports.length,
               `each backend's metrics port is its own: ${BASES.map((b, i) => `${b.replace(/\/.*/, '')} ${ports[i]}`).join(', ')}`);
        for (const [overlay, file] of [['kubelet-sock', 'registration.yaml'], ['kubelet-sock', 'no-plugins-registry.yaml'],
                                       ['plugin-watcher', 'registration.yaml']]) {
                const texts = BASES.map((b) => b.replace(/\/.*/, '')).map((b) => {
                        const f = path.join(deploy, b, overlay, file);
                        return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').replace(new RegExp(`\\bkdp-${b}\\b`, 'g'), 'kdp-BACKEND') : null;
                });
                report(texts[0] !== null && texts.every((t) => t === texts[0]),
                       `deploy/*/${overlay}/${file}: the same in every backend but for the DaemonSet's name`);
        }
}

/* The overlay check catches an overlay that changes more than it must, or less. */
function brokenOverlays(renderings) {
        const from = renderings.get('gpu/base');
        const to = renderings.get('gpu/privileged');
        if (!from || !to)
                return;
        const [, , want] = OVERLAYS.find(([dir]) => dir === 'gpu/privileged');
        const more = JSON.parse(JSON.stringify(to));
        more.find((o) => o.kind === 'DaemonSet').spec.template.spec.containers[0].image = 'kdp:latest';
        for (const [what, objs] of [['changes the image too', more], ['changes nothing', from]])
                report(JSON.stringify(renderingDiff(from, objs)) !== JSON.stringify(want),
                       `the overlay check rejects a deploy/gpu/privileged that ${what}`);
}

/* The field check refuses what the kustomize of kubectl 1.20 cannot read. */
function brokenKustomizations(deploy) {
        const dir = path.join(deploy, 'gpu', 'privileged');
        const target = { group: 'apps', version: 'v1', kind: 'DaemonSet', name: 'kdp-gpu' };
        const cases = [
                ['patches (v2 reads it as patchesStrategicMerge)', { patches: [{ target, path: 'security-context.yaml' }] }],
                ['components', { components: ['../base'] }],
                ['a directory in resources', { resources: ['../base'] }],
                ['an inline patch in patchesJson6902', { patchesJson6902: [{ target, patch: '[]' }] }],
                ['a patch file that does not exist', { patchesStrategicMerge: ['missing.yaml'] }],
        ];
        for (const [what, k] of cases)
                report(kustomizeV2Errors(dir, { apiVersion: KUSTOMIZE_API, kind: 'Kustomization', ...k }).length > 0,
                       `the field check refuses ${what}`);
}

// ---- main --------------------------------------------------------------------------------------

/*
 * Every kustomization under deploy/ (keyed by its directory relative to deploy/): kept to the
 * fields of KUSTOMIZE_V2, rendered by kubectl, each object it renders valid. Returns
 * { dirs: [every one], renderings: Map(dir -> objects) of those rendered, files: Set of the files
 * they name }.
 */
function renderAll(deploy) {
        const dirs = walk(deploy).filter((f) => path.basename(f) === 'kustomization.yaml')
                .map((f) => path.relative(deploy, path.dirname(f)));
        const renderings = new Map();
        const files = new Set();
        for (const rel of dirs) {
                const dir = path.join(deploy, rel);
                const file = path.join(dir, 'kustomization.yaml');
                const docs = readDocs(file, `deploy/${rel}/kustomization.yaml`);
                const k = docs.length === 1 && !docs[0].errors.length ? docs[0].value : null;
                report(!!k && kustomizeV2Errors(dir, k).length === 0, `deploy/${rel}: fields the kustomize of kubectl 1.20 reads`,
                       k ? kustomizeV2Errors(dir, k) : ['not one YAML document']);
                kustomizationFiles(dir, k || {}).forEach((f) => files.add(f));
                const text = kustomizeText(kubectl(), dir);
                const r = renderedObjects(text);
                if (!report(!r.error, `deploy/${rel}: ${kubectl()} kustomize renders it`, [r.error]))
                        continue;
                if (process.env.KDP_KUBECTL_ALSO) {
                        const also = kustomizeText(process.env.KDP_KUBECTL_ALSO, dir);
                        report(!also.error && also.stdout === text.stdout,
                               `deploy/${rel}: ${process.env.KDP_KUBECTL_ALSO} kustomize renders it byte for byte the same`,
                               [also.error || 'the renderings differ']);
                }
                for (const o of r.objs) {
                        const errs = schemaErrors(o);
                        report(errs.length === 0, `deploy/${rel} -> ${describe(o)}`, errs.map(formatError));
                }
                renderings.set(rel, r.objs);
        }
        return { dirs, renderings, files };
}

/* Each overlay renders exactly what it builds on but for the values it must change. */
function overlayChecks(dirs, renderings) {
        const known = [...BASES, ...OVERLAYS.map(([dir]) => dir)].sort();
        report(JSON.stringify([...dirs].sort()) === JSON.stringify(known),
               `the kustomizations are the bases and overlays this test knows: ${known.join(', ')}`,
               [`found: ${[...dirs].sort().join(', ')}`]);
        for (const [dir, from, want] of OVERLAYS) {
                const got = renderings.has(dir) && renderings.has(from) ? renderingDiff(renderings.get(from), renderings.get(dir)) : null;
                report(JSON.stringify(got) === JSON.stringify(want),
                       `deploy/${dir} changes of deploy/${from} exactly ${want.map((w) => w.replace(/^.* /, '')).join(', ')}`,
                       [`changed: ${got ? got.join(', ') || 'nothing' : 'not rendered'}`, `expected: ${want.join(', ')}`]);
        }
}

/* The examples: each a Pod asking for one resource of its backend (and the SR-IOV network). */
function exampleChecks(docsOf) {
        const limit = (file, resource, n) => {
                const pod = docsOf(file).find((o) => o.kind === 'Pod');
                report(!!pod && pod.spec.containers.some((c) => c.resources && c.resources.limits &&
                        String(c.resources.limits[resource]) === String(n)), `${file}: a Pod with limits ${resource}: ${n}`);
        };
        limit('deploy/gpu/pod-example.yaml', 'nvidia.com/gpu', 1);
        limit('deploy/fpga/pod-example.yaml', 'fpga.intel.com/af-bfa.d84.v6xNhR7oVv6MlYZc4buqLdhCTcSko8QT-J5DNoP5BAs', 1);
        limit('deploy/example/pod-example.yaml', 'example.com/widget', 2);
        sriovExampleChecks(docsOf('deploy/sriov/pod-example.yaml'));
}

function main() {
        const src = path.resolve(process.argv[2] || path.join(__dirname, '..', '..'));
        const deploy = path.join(src, 'deploy');

        // 1. what each kustomization renders, and every other document under deploy/
        const { dirs, renderings, files } = renderAll(deploy);
        const standalone = [];          // { label, value } of every valid document of no kustomization
        const inChart = (f) => path.relative(deploy, f).startsWith(`helm${path.sep}`);
        for (const file of walk(deploy).filter((f) => path.basename(f) !== 'kustomization.yaml' && !files.has(f) && !inChart(f))) {
                for (const d of readDocs(file, path.relative(src, file))) {
                        const errs = d.errors.length ? d.errors : schemaErrors(d.value).map(formatError);
                        if (report(errs.length === 0, `${d.label}: ${d.errors.length ? 'YAML' : describe(d.value)}`, errs))
                                standalone.push(d);
                }
        }
        report(closedObjects > 0, `schemas closed to unknown fields: ${closedObjects} object types`);

        // 2. the required properties, what each overlay changes, the examples
        const rendered = (dir, kind) => (renderings.get(dir) || []).filter((o) => o.kind === kind);
        for (const [dir, properties] of PROPERTIES) {
                const ds = rendered(dir, 'DaemonSet');
                if (report(ds.length === 1, `deploy/${dir} renders one DaemonSet`))
                        for (const [what, ok] of properties(ds[0], rendered(dir, 'ConfigMap')))
                                report(ok, `deploy/${dir}: ${what}`);
        }
        overlayChecks(dirs, renderings);
        exampleChecks((rel) => standalone.filter((d) => d.label === rel || d.label.startsWith(`${rel}#`)).map((d) => d.value));

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
        const gpu = rendered('gpu/unprivileged', 'DaemonSet')[0];
        const sriov = rendered('sriov/unprivileged', 'DaemonSet')[0];
        const configMaps = rendered('sriov/unprivileged', 'ConfigMap');
        if (gpu) {
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
                        ['a CPU limit', (ds) => { ds.spec.template.spec.containers[0].resources.limits.cpu = '100m'; }],
                        ['maxSurge 1', (ds) => { ds.spec.updateStrategy.rollingUpdate.maxSurge = 1; }],
                ];
                for (const [what, mutate] of broken) {
                        const ds = JSON.parse(JSON.stringify(gpu));
                        mutate(ds);
                        const failing = gpuProperties(ds, rendered('gpu/unprivileged', 'ConfigMap')).filter(([, ok]) => !ok);
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
                         [SRIOV_ARGS_CHECK, '/var/run/cdi mounted writable exactly when sriov.cdi is true']],
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
        brokenMetricsAndRegistration(renderings);
        sharedChecks(deploy, renderings);
        brokenOverlays(renderings);
        brokenKustomizations(deploy);

        console.log(`${passed} passed, ${failed} failed`);
        return failed === 0 ? 0 : 1;
}

if (require.main === module)
        process.exitCode = main();
module.exports = { parseYaml, kustomize, argValue, optionValue, renderingDiff, report, results: () => ({ passed, failed }) };
