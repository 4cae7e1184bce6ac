{{/*
Names. With neither override, objects are named after the release, or
"<release>-graft" when the release name does not contain "graft".
*/}}
{{- define "graft.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "graft.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "graft.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Labels. The chart gives each object the labels deploy/ gives it, plus
Helm's own four (graft.helmLabels), which the comparison with kustomize
leaves out of metadata.labels.
*/}}
{{- define "graft.helmLabels" -}}
{{ include "graft.helmOwnLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Helm's labels but the release's name, which selectors carry. */}}
{{- define "graft.helmOwnLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ include "graft.version" . | quote }}
{{- end -}}

{{/*
What graft's selectors (Deployment, Service, PodDisruptionBudget,
ServiceMonitor, topology spread) match: the name and the release, so two
releases in one namespace never select each other's Pods. deploy/base
carries the same two labels, with instance "graft", so that a release
named graft adopts a kustomize install without recreating the
Deployment (docs/tasks/upgrade.md).
*/}}
{{- define "graft.selectorLabels" -}}
app.kubernetes.io/name: {{ include "graft.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
What the audit exporter's selectors match: a name of its own, so that
graft's selectors (name and instance) never take its Pods.
*/}}
{{- define "graft.auditSelectorLabels" -}}
app.kubernetes.io/name: {{ include "graft.name" . }}-audit
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
What graft watchdog's selectors match: a name of its own, as the audit
exporter's.
*/}}
{{- define "graft.watchdogSelectorLabels" -}}
app.kubernetes.io/name: {{ include "graft.name" . }}-watchdog
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Objects of graft's own: its name, part of graft. */}}
{{- define "graft.labels" -}}
{{ include "graft.selectorLabels" . }}
app.kubernetes.io/part-of: {{ .Chart.Name }}
{{ include "graft.helmOwnLabels" . }}
{{- end -}}

{{/* Objects that belong to graft without being it (quota, ConfigMaps). */}}
{{- define "graft.partOfLabels" -}}
app.kubernetes.io/part-of: {{ .Chart.Name }}
{{ include "graft.helmLabels" . }}
{{- end -}}

{{/*
The image: repository:tag, and @digest when image.digest pins it.
*/}}
{{- define "graft.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- with .Values.image.digest -}}
{{- $ref = printf "%s@%s" $ref . -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/*
The app.kubernetes.io/version label: the tag alone, never a digest (a tag
given as tag@sha256:... loses its digest), cut to what a label value may
hold (63 characters, starting and ending with a letter or digit).
*/}}
{{- define "graft.version" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- splitList "@" $tag | first | trunc 63 | trimAll "-_." -}}
{{- end -}}

{{/*
The configuration. graft.defaultProfile is served on /inject.
graft.profileNames is a JSON list: the default profile first, then the
others by name (the webhooks' order; their namespaceSelectors are disjoint,
so the order does not change what is called).
*/}}
{{- define "graft.defaultProfile" -}}
{{- .Values.config.defaultProfile | default "enabled" -}}
{{- end -}}

{{- define "graft.profileNames" -}}
{{- $profiles := .Values.config.profiles | default dict -}}
{{- if not $profiles -}}
{{- fail "config.profiles is empty: the chart makes one webhook per profile, so name at least one" -}}
{{- end -}}
{{- $default := include "graft.defaultProfile" . -}}
{{- if not (hasKey $profiles $default) -}}
{{- fail (printf "config.defaultProfile %q is not one of config.profiles" $default) -}}
{{- end -}}
{{- $names := list $default -}}
{{- range $name, $_ := $profiles -}}
{{- if ne $name $default -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
graft.splitLevels is a JSON list of the Pod Security levels whose
namespaces get webhooks of their own for a profile (dict "root" "profile"),
as `graft webhooks` writes them: those stricter than the highest
podSecurity.maxLevel the profile has at the top level or in a revision.
*/}}
{{- define "graft.splitLevels" -}}
{{- $rank := dict "restricted" 0 "baseline" 1 "privileged" 2 -}}
{{- $max := 0 -}}
{{- $entries := list (get (.root.Values.config.profiles | default dict) .profile) -}}
{{- range $_, $r := .root.Values.config.revisions | default dict -}}
{{- $entries = append $entries (get ($r.profiles | default dict) $.profile) -}}
{{- end -}}
{{- range $p := $entries -}}
{{- if $p -}}
{{- $l := ($p.podSecurity | default dict).maxLevel | default "restricted" -}}
{{- if not (hasKey $rank $l) -}}
{{- fail (printf "profile %s: podSecurity.maxLevel %q: want restricted, baseline or privileged" $.profile $l) -}}
{{- end -}}
{{- $max = max $max (get $rank $l) -}}
{{- end -}}
{{- end -}}
{{- $out := list -}}
{{- range $l := list "restricted" "baseline" -}}
{{- if lt (get $rank $l) $max -}}
{{- $out = append $out $l -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Namespaces never injected: the configured ones and graft's own. */}}
{{- define "graft.excludedNamespaces" -}}
{{- $list := .Values.config.excludedNamespaces | default (list "kube-system" "kube-public" "kube-node-lease") -}}
{{- toJson (append $list .Release.Namespace | uniq) -}}
{{- end -}}

{{/*
The configuration file below its apiVersion and kind: the values under
config, empty keys left out, and the excluded namespaces completed.
*/}}
{{- define "graft.configFile" -}}
{{- $file := dict -}}
{{- range $key, $value := .Values.config -}}
{{- if $value -}}
{{- $_ := set $file $key $value -}}
{{- end -}}
{{- end -}}
{{- $_ := set $file "excludedNamespaces" (include "graft.excludedNamespaces" . | fromJsonArray) -}}
{{- toYaml $file -}}
{{- end -}}

{{/* Template files for the templates ConfigMap: file name -> contents. */}}
{{- define "graft.templateFiles" -}}
{{- $files := dict -}}
{{- if .Values.templates.builtin -}}
{{- range $path, $_ := .Files.Glob "files/templates/*.yaml" -}}
{{- $_ := set $files (base $path) ($.Files.Get $path) -}}
{{- end -}}
{{- end -}}
{{- range $name, $body := .Values.templates.extra -}}
{{- $_ := set $files $name $body -}}
{{- end -}}
{{- toJson $files -}}
{{- end -}}

{{/* The Secret graft serves with. */}}
{{- define "graft.tlsSecretName" -}}
{{- if eq .Values.certificates.source "existingSecret" -}}
{{- required "certificates.existingSecret.name is required with certificates.source=existingSecret" .Values.certificates.existingSecret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "graft.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The webhooks' caBundle (base64), empty when cert-manager injects it. */}}
{{- define "graft.caBundle" -}}
{{- $c := .Values.certificates -}}
{{- if eq $c.source "graftCerts" -}}
{{- required "certificates.caBundle (the ca.crt `graft certs` wrote) is required with certificates.source=graftCerts" $c.caBundle | b64enc -}}
{{- else if and (eq $c.source "existingSecret") $c.caBundle -}}
{{- $c.caBundle | b64enc -}}
{{- end -}}
{{- end -}}

{{/*
Revisions (issue 13), by the rules `graft webhooks` follows
(internal/registration) for the configuration under config:

graft.topRevision: the top level's revision name.
graft.webhookRevisions: JSON list of the graft.dev/rev values with webhooks
of their own: the revisions (the top level's first) and the tags.
*/}}
{{- define "graft.topRevision" -}}
{{- .Values.config.revision | default "default" -}}
{{- end -}}

{{- define "graft.webhookRevisions" -}}
{{- $names := list (include "graft.topRevision" .) -}}
{{- range $name, $_ := .Values.config.revisions | default dict -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- range $name, $_ := .Values.config.tags | default dict -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
graft.targets (dict "root" $ "rev" name): JSON list of the revisions a
graft.dev/rev value serves from: a revision itself, or a tag's revisions
with a share above 0. An empty name is the default revision's.
*/}}
{{- define "graft.targets" -}}
{{- $cfg := .root.Values.config -}}
{{- $name := .rev | default $cfg.defaultRevision | default (include "graft.topRevision" .root) -}}
{{- $tags := $cfg.tags | default dict -}}
{{- $out := list $name -}}
{{- if hasKey $tags $name -}}
{{- $tag := get $tags $name | default dict -}}
{{- if $tag.revision -}}
{{- $out = list $tag.revision -}}
{{- else -}}
{{- $out = list -}}
{{- range $tag.split -}}
{{- if gt (int .percent) 0 -}}
{{- $out = append $out .revision -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
graft.servesInject (dict "root" $ "profile" name): "true" when /inject
serves the profile: it is the default profile of every revision the
default revision may choose.
*/}}
{{- define "graft.servesInject" -}}
{{- $root := .root -}}
{{- $profile := .profile -}}
{{- $top := include "graft.topRevision" $root -}}
{{- $topDefault := include "graft.defaultProfile" $root -}}
{{- $all := true -}}
{{- range $rev := include "graft.targets" (dict "root" $root "rev" "") | fromJsonArray -}}
{{- $default := $topDefault -}}
{{- if ne $rev $top -}}
{{- $r := get ($root.Values.config.revisions | default dict) $rev | default dict -}}
{{- $default = $r.defaultProfile | default $topDefault -}}
{{- end -}}
{{- if ne $default $profile -}}
{{- $all = false -}}
{{- end -}}
{{- end -}}
{{- if $all }}true{{ end -}}
{{- end -}}

{{/*
graft.templateChecks: JSON of what the guarantee policies compare of each
template, by name: the built-in templates' (files/guarantee-checks.json,
`graft guarantee --checks`), then policy.templateChecks. A file of
templates.extra replaces a built-in template: its checks must then come
from policy.templateChecks too.
*/}}
{{- define "graft.templateChecks" -}}
{{- $checks := .Files.Get "files/guarantee-checks.json" | fromJson -}}
{{- range $file, $_ := .Values.templates.extra -}}
{{- $_ := unset $checks (trimSuffix ".yaml" $file) -}}
{{- end -}}
{{- range $name, $c := .Values.policy.templateChecks -}}
{{- $_ := set $checks $name $c -}}
{{- end -}}
{{- toJson $checks -}}
{{- end -}}

{{/*
graft.seconds: a Go duration string ("500ms", "1m30s") in seconds; ""
and "0" are 0. The values schema has already checked its form.
*/}}
{{- define "graft.seconds" -}}
{{- $units := dict "ns" 1e-9 "us" 1e-6 "µs" 1e-6 "μs" 1e-6 "ms" 1e-3 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9]*[.]?[0-9]+(ns|us|µs|μs|ms|s|m|h)" (toString .) -1 -}}
{{- $num := regexFind "^[0-9]*[.]?[0-9]+" . -}}
{{- $total = addf $total (mulf (float64 $num) (get $units (trimPrefix $num .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/*
graft.latencyThreshold: where GraftLatencyNearBudget fires, in seconds:
monitoring.prometheusRule.latencyThresholdSeconds when set, else 80% of
the budget graft answers within, as webhook/deadline.go computes it: the
smaller of config.server.budget (200ms when unset) and the webhooks'
timeoutSeconds less config.server.timeoutMargin (100ms when unset; half
the timeout when that leaves nothing). graft's latency histogram has a
bound at 80% of its budget (webhook/metrics.go), so unless the timeout is
what binds, the alert compares with a bound, not an interpolation.
*/}}
{{- define "graft.latencyThreshold" -}}
{{- $set := .Values.monitoring.prometheusRule.latencyThresholdSeconds | default 0 | float64 -}}
{{- if gt $set 0.0 -}}
{{- $set -}}
{{- else -}}
{{- $server := .Values.config.server | default dict -}}
{{- $budget := include "graft.seconds" ($server.budget | default "200ms") | float64 -}}
{{- if eq $budget 0.0 }}{{ $budget = 0.2 }}{{ end -}}
{{- $margin := include "graft.seconds" ($server.timeoutMargin | default "100ms") | float64 -}}
{{- if eq $margin 0.0 }}{{ $margin = 0.1 }}{{ end -}}
{{- $timeout := .Values.webhook.timeoutSeconds | float64 -}}
{{- $left := subf $timeout $margin -}}
{{- if le $left 0.0 }}{{ $left = divf $timeout 2 }}{{ end -}}
{{- round (mulf 0.8 (minf $budget $left)) 6 -}}
{{- end -}}
{{- end -}}
