{{/*
herald.name: the name of every object of the chart ("herald" unless nameOverride).
*/}}
{{- define "herald.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
herald.configName: the ConfigMap the agent reads with --config-dir.
*/}}
{{- define "herald.configName" -}}
{{- printf "%s-config" (include "herald.name" .) -}}
{{- end -}}

{{/*
herald.selectorLabels: labels that select the agent's Pods; never change them, a DaemonSet's
selector is immutable.
*/}}
{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ include "herald.name" . }}
app.kubernetes.io/component: agent
{{- end -}}

{{/*
herald.labels: labels of every object.
*/}}
{{- define "herald.labels" -}}
{{ include "herald.selectorLabels" . }}
app.kubernetes.io/part-of: herald
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
herald.image: repository:tag, or repository@digest when a digest is set.
*/}}
{{- define "herald.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
herald.devices: the devices value as the agent's flag takes it (comma-separated). A list or
a single string are both accepted.
*/}}
{{- define "herald.devices" -}}
{{- if kindIs "string" .Values.devices -}}
{{- .Values.devices -}}
{{- else -}}
{{- join "," (.Values.devices | default list) -}}
{{- end -}}
{{- end -}}
