{{- define "keycloak-operator.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "keycloak-operator.labels" -}}
app.kubernetes.io/name: keycloak-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "keycloak-operator.selectorLabels" -}}
app.kubernetes.io/name: keycloak-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
