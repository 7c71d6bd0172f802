{{/* Chart name. */}}
{{- define "zonekeeper.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name. */}}
{{- define "zonekeeper.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "zonekeeper.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "zonekeeper.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "zonekeeper.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "zonekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: zonekeeper
{{- end }}

{{- define "zonekeeper.selector" -}}
app.kubernetes.io/name: {{ include "zonekeeper.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "zonekeeper.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "zonekeeper.operatorServiceAccount" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (printf "%s-operator" (include "zonekeeper.fullname" .)) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "zonekeeper.serverServiceAccount" -}}
{{- if .Values.server.serviceAccount.create }}
{{- default (printf "%s-server" (include "zonekeeper.fullname" .)) .Values.server.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.server.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Downward-API environment every container gets. */}}
{{- define "zonekeeper.podEnv" -}}
- name: POD_NAME
  valueFrom: { fieldRef: { fieldPath: metadata.name } }
- name: POD_NAMESPACE
  valueFrom: { fieldRef: { fieldPath: metadata.namespace } }
{{- with .Values.mallocArenaMax }}
- name: MALLOC_ARENA_MAX
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The write-access file of the operator (ADR 0016): credentials by reference, quotas. */}}
{{- define "zonekeeper.writeAccess" -}}
{{- $w := .Values.operator.apiWrites -}}
{{- toYaml (dict "credentials" $w.credentials "quotas" $w.quotas "defaultQuota" $w.defaultQuota) -}}
{{- end }}

{{/* Kubernetes users that may forward writes to the operator's leader: the server pods, and any extra. */}}
{{- define "zonekeeper.writeForwarders" -}}
{{- $users := list (printf "system:serviceaccount:%s:%s" .Release.Namespace (include "zonekeeper.serverServiceAccount" .)) -}}
{{- join "," (concat $users .Values.operator.apiWrites.extraForwarders) -}}
{{- end }}

{{/* `--health-probe-allow` and `--health-probe-ca` for the operator and the servers (values healthProbes). */}}
{{- define "zonekeeper.healthProbeArgs" -}}
{{- range .Values.healthProbes.allow }}
- --health-probe-allow={{ . }}
{{- end }}
{{- with .Values.healthProbes.namespaceLimit }}
- --health-probe-namespace-limit={{ . }}
{{- end }}
{{- if .Values.healthProbes.ca.configMap }}
{{- range .Values.healthProbes.ca.keys }}
- --health-probe-ca=/etc/zonekeeper/health-probe-ca/{{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* Namespace of the DNSSEC key Secrets: server.dnssecKeyNamespace, else "<release namespace>-dnssec-keys", which the chart creates (keys only, so the servers' get on Secrets there reaches nothing else). */}}
{{- define "zonekeeper.dnssecKeyNamespace" -}}
{{- .Values.server.dnssecKeyNamespace | default (printf "%s-dnssec-keys" .Release.Namespace | trunc 63 | trimSuffix "-") -}}
{{- end }}
