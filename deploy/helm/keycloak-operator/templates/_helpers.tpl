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

{{- /* The pods' labels: the selector's, then podLabels. A podLabels key of the selector's is refused rather
than dropped: the Deployment and the metrics Service find the pods by those labels. */ -}}
{{- define "keycloak-operator.podLabels" -}}
{{- $selector := include "keycloak-operator.selectorLabels" . | fromYaml }}
{{- range $key, $_ := .Values.podLabels }}
{{- if hasKey $selector $key }}
{{- fail (printf "podLabels.%s: the chart's selector label; the Deployment and the metrics Service find the operator's pods by it, so it cannot be set" $key) }}
{{- end }}
{{- end }}
{{- toYaml (merge (dict) $selector .Values.podLabels) }}
{{- end }}

{{- /* The operator container's environment: the chart's variables, then extraEnv. An extraEnv name the chart
sets is refused: Kubernetes keeps the last of two same-named variables, so it would silently replace the
value the chart derives from its own values (peering.lifetime, resyncSeconds...). */ -}}
{{- define "keycloak-operator.env" -}}
{{- $chart := include "keycloak-operator.chartEnv" . | fromYamlArray }}
{{- $names := list }}
{{- range $chart }}{{ $names = append $names .name }}{{ end }}
{{- range $i, $var := .Values.extraEnv }}
{{- if has $var.name $names }}
{{- fail (printf "extraEnv[%d].name: %s is set by the chart (%s); set the chart's value instead" $i $var.name (join ", " $names)) }}
{{- end }}
{{- end }}
{{- toYaml (concat $chart .Values.extraEnv) }}
{{- end }}

{{- define "keycloak-operator.chartEnv" -}}
# POD_ID: the replica's name in the peering object. KCOP_OPERATOR_NAMESPACE: what a Keycloak's NetworkPolicy
# lets reach its HTTP port.
- name: POD_ID
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: KCOP_OPERATOR_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: KCOP_PEERING_LIFETIME
  value: {{ .Values.peering.lifetime | quote }}
- name: KCOP_RESYNC_SECONDS
  value: {{ .Values.resyncSeconds | quote }}
- name: KCOP_REVOCATION_GRACE_SECONDS
  value: {{ .Values.replication.revocationGraceSeconds | quote }}
{{- end }}
