{{- define "icefloe.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "icefloe.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "icefloe.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "icefloe.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "icefloe.keySecret" -}}
{{- if .Values.ticketKey.existingSecret -}}
{{ .Values.ticketKey.existingSecret }}
{{- else -}}
{{ include "icefloe.fullname" . }}-ticket-key
{{- end -}}
{{- end -}}

{{- define "icefloe.keySecretKey" -}}
{{- if .Values.ticketKey.existingSecret -}}
{{ .Values.ticketKey.existingSecretKey }}
{{- else -}}
ticket-key
{{- end -}}
{{- end -}}

{{- define "icefloe.workersService" -}}
{{ include "icefloe.fullname" . }}-workers
{{- end -}}

{{/* The pod spec parts coordinators and workers share. */}}
{{- define "icefloe.podCommon" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
terminationGracePeriodSeconds: {{ add .root.Values.drainTimeoutSeconds .root.Values.terminationExtraSeconds }}
securityContext:
  runAsNonRoot: true
  runAsUser: 10001
  runAsGroup: 10001
  fsGroup: 10001
volumes:
  - name: config
    configMap:
      name: {{ include "icefloe.fullname" .root }}-config
  - name: data
    emptyDir: {}
  {{- if .root.Values.tls.enabled }}
  - name: tls
    secret:
      secretName: {{ required "tls.existingSecret is required when tls.enabled" .root.Values.tls.existingSecret }}
  {{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The container parts coordinators and workers share. */}}
{{- define "icefloe.containerCommon" -}}
image: {{ include "icefloe.image" .root }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
args: ["{{ .component }}", "--config", "/etc/icefloe/{{ .component }}.yaml"{{ if .root.Values.insecureNoAuth }}, "--insecure-no-auth"{{ end }}]
ports:
  - name: flight
    containerPort: {{ .root.Values.port }}
    protocol: TCP
  {{- if .root.Values.metrics.enabled }}
  - name: http
    containerPort: {{ .root.Values.metrics.port }}
    protocol: TCP
  {{- end }}
env:
  - name: ICEFLOE_TICKET_KEY
    valueFrom:
      secretKeyRef:
        name: {{ include "icefloe.keySecret" .root }}
        key: {{ include "icefloe.keySecretKey" .root }}
  - name: POD_IP
    valueFrom:
      fieldRef:
        fieldPath: status.podIP
  {{- if .root.Values.auth.enabled }}
  - name: ICEFLOE_ADMIN_PASSWORD_HASH
    valueFrom:
      secretKeyRef:
        name: {{ .root.Values.auth.existingSecret | default (printf "%s-admin" (include "icefloe.fullname" .root)) }}
        key: password-hash
  {{- end }}
{{- if or .root.Values.catalogCredentials.existingSecret .root.Values.catalogCredentials.values }}
envFrom:
  - secretRef:
      name: {{ .root.Values.catalogCredentials.existingSecret | default (printf "%s-catalog-credentials" (include "icefloe.fullname" .root)) }}
{{- end }}
# Readiness is the health service's "" status: NOT_SERVING from the
# moment a pod drains. Liveness is "liveness", SERVING until it exits.
readinessProbe:
  grpc:
    port: {{ .root.Values.port }}
  periodSeconds: 2
  failureThreshold: 1
livenessProbe:
  grpc:
    port: {{ .root.Values.port }}
    service: liveness
  initialDelaySeconds: 10
  periodSeconds: 10
  failureThreshold: 3
resources:
  requests:
    cpu: {{ .values.cpu | quote }}
    memory: {{ add .values.memoryBudgetMiB .values.memoryOverheadMiB }}Mi
  limits:
    memory: {{ add .values.memoryBudgetMiB .values.memoryOverheadMiB }}Mi
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
volumeMounts:
  - name: config
    mountPath: /etc/icefloe
    readOnly: true
  - name: data
    mountPath: /var/lib/icefloe
  {{- if .root.Values.tls.enabled }}
  - name: tls
    mountPath: /etc/icefloe-tls
    readOnly: true
  {{- end }}
{{- end -}}

{{/* The prometheus.io annotations of a pod that serves /metrics. */}}
{{- define "icefloe.scrapeAnnotations" -}}
{{- if and .Values.metrics.enabled .Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: "{{ .Values.metrics.port }}"
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* The auth: section of both configs (values' auth), or nothing with
auth off, which insecureNoAuth must then allow. */}}
{{- define "icefloe.authConfig" -}}
{{- if .Values.auth.enabled -}}
auth:
  {{- with .Values.auth.tokenTTL }}
  token_ttl: {{ . }}
  {{- end }}
  users:
    - name: {{ .Values.auth.adminUser | quote }}
      password_hash: "${ICEFLOE_ADMIN_PASSWORD_HASH}"
      roles: [admin]
    {{- with .Values.auth.users }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.auth.roles }}
  roles:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- else if not .Values.insecureNoAuth }}
{{- fail "auth.enabled is false: set insecureNoAuth: true to run without authentication (--insecure-no-auth; anyone who reaches the service may read, write and drop every table), or keep auth on" }}
{{- end }}
{{- end -}}
