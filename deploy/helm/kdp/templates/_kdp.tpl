{{- /*
SPDX-License-Identifier: GPL-2.0-or-later

The chart renders what deploy/<backend>/<overlay> renders with kustomize, from the same files:
files/<backend> is a symbolic link to deploy/<backend> (`helm package` copies what it links to,
less what .helmignore leaves out). The templates take the base's daemonset.yaml and
configmap.yaml and do what the overlays do: the securityContext of the overlay's
security-context.yaml, the first arg, the plugins registry's mount and volume, fpga/region's
config.yaml, a config file of the operator's; and what kustomize's namespace and images do.
ctest deploy/helm-template checks that each overlay and its values render the same objects.
*/ -}}

{{- /* kdp.file (list $ PATH): the text of files/<backend>/PATH (deploy/<backend>/PATH), which must hold one object */ -}}
{{- define "kdp.file" -}}
{{- $root := index . 0 }}
{{- $path := printf "files/%s/%s" $root.Values.backend (index . 1) }}
{{- $text := $root.Files.Get $path }}
{{- if not $text }}
{{- fail (printf "%s: missing from the chart" $path) }}
{{- end }}
{{- if hasKey (fromYaml $text) "Error" }}
{{- fail (printf "%s: %s" $path (get (fromYaml $text) "Error")) }}
{{- end }}
{{- $text }}
{{- end }}

{{- /* kdp.check: the combinations of values the schema cannot refuse */ -}}
{{- define "kdp.check" -}}
{{- if and .Values.privileged (ne .Values.backend "gpu") }}
{{- fail (printf "privileged: true is for the gpu backend only (backend %s opens no device node)" .Values.backend) }}
{{- end }}
{{- if and (eq .Values.backend "fpga") (eq .Values.fpga.mode "region") .Values.config }}
{{- fail "fpga.mode: region and config both given: say the mode in config (fpga: {mode: region})" }}
{{- end }}
{{- end }}
