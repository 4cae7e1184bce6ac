{{- /*
graft's guarantee policies, assembled from a configuration and the
guarantee checks of its templates (export.Checks). internal/registration
runs this file (`graft guarantee`, deploy/base/validatingadmissionpolicy.yaml)
and the Helm chart runs a copy (templates/_guarantee.tpl, `make
chart-files`): one assembly, so the two cannot drift. Only functions both
have are used: text/template's, sprig's, toJson, fromJson,
fromJsonArray, include and fail.

Input (JSON types, as Helm's values):
  service, namespace      graft's Service and namespace
  labels                  the objects' labels
  validationActions       the bindings' actions
  excluded                namespaces never checked
  profiles                profile names, the default first
  revisions               revision names, the top level's first
  tags                    tag names
  byRevision.<rev>.profiles.<name>   each revision's profiles
  checks.<rev>.<template>            export.TemplateCheck of each template

Output: the policies, each followed by its bindings, as JSON documents.
What the CEL checks, and why it is shaped so, is in
docs/concepts/guarantee.md.
*/ -}}

{{- define "graft.guarantee" -}}
{{- $root := . -}}
{{- $S := include "graft.guarantee.names" . | fromJson -}}
{{- $allRevs := .revisions -}}
{{- range $profile := .profiles -}}
{{- $podRev := false -}}
{{- range $rev := $allRevs -}}
{{- $p := include "graft.guarantee.profile" (dict "root" $root "rev" $rev "profile" $profile) | fromJson -}}
{{- $podRev = or $podRev $p.podRevision -}}
{{- end -}}
{{- /* Groups: the policy for no label and tags (every revision: a tag
moves, and splits by a hash CEL cannot compute), and one per revision
label where graft serves several. */ -}}
{{- $base := printf "%s-injection-required-%s" $root.service $profile -}}
{{- $tags := $root.tags | default list -}}
{{- $labelled := $tags -}}
{{- $groups := list -}}
{{- if or (eq (len $allRevs) 1) $podRev -}}
{{- $labelled = concat $allRevs $tags -}}
{{- else -}}
{{- range $rev := $allRevs -}}
{{- $groups = append $groups (dict "name" (printf "%s.%s.rev" $base $rev) "revisions" (list $rev) "bindings" (list (dict "name" (printf "%s.%s.rev" $base $rev) "op" "In" "values" (list $rev)))) -}}
{{- end -}}
{{- end -}}
{{- $bindings := list (dict "name" $base "op" "DoesNotExist") -}}
{{- if $labelled -}}
{{- $bindings = append $bindings (dict "name" (printf "%s.labelled" $base) "op" "In" "values" $labelled) -}}
{{- end -}}
{{- $groups = prepend $groups (dict "name" $base "revisions" $allRevs "bindings" $bindings) -}}
{{- range $g := $groups }}
{{ include "graft.guarantee.policy" (dict "root" $root "profile" $profile "group" $g "S" $S) }}
{{- end -}}
{{- end }}
{{ include "graft.guarantee.unknownRevision" $root }}
{{- end -}}

{{- /* graft.guarantee.names: JSON map, every container name a template of
any revision renders -> the templates that render it. */ -}}
{{- define "graft.guarantee.names" -}}
{{- $out := dict -}}
{{- range $rev, $checks := .checks -}}
{{- range $t, $tc := $checks -}}
{{- range $n, $_ := $tc.containers -}}
{{- $_ := set $out $n (append (get $out $n | default list) $t | uniq | sortAlpha) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /* graft.guarantee.profile (dict root rev profile): JSON of the
profile at the revision, defaulted as the engine defaults it. */ -}}
{{- define "graft.guarantee.profile" -}}
{{- $p := index .root.byRevision .rev "profiles" .profile | default dict -}}
{{- $templates := $p.templates | default list -}}
{{- $allowed := $templates -}}
{{- range $p.allowedTemplates | default list -}}
{{- if not (has . $allowed) -}}
{{- $allowed = append $allowed . -}}
{{- end -}}
{{- end -}}
{{- $ps := $p.podSecurity | default dict -}}
{{- toJson (dict
  "templates" $templates
  "allowed" $allowed
  "params" ($p.params | default dict)
  "locked" ($p.lockedParams | default list)
  "allowedImages" ($p.allowedImages | default list)
  "injectHostNetwork" ($p.injectHostNetwork | default false)
  "podRevision" ($p.podRevision | default false)
  "keep" (eq ($p.onConflict | default "deny") "keep")
  "lenient" (eq ($p.onInvalidParams | default "deny") "default")
  "maxLevel" ($ps.maxLevel | default "restricted")) -}}
{{- end -}}

{{- /* graft.guarantee.template (dict root rev profile t): JSON of what
the policy knows of template t in the profile at the revision: its check
("check"), the values the profile gives its parameters ("raw", as
written; "texts", as rendered), and the variant those values select
("variant"). */ -}}
{{- define "graft.guarantee.template" -}}
{{- $tc := index .root.checks .rev .t -}}
{{- if not $tc -}}
{{- fail (printf "guarantee: no checks for template %s (revision %s): give the chart's policy.templateChecks its entry from `graft guarantee --checks --templates-dir DIR`" .t .rev) -}}
{{- end -}}
{{- $given := index .profile.params .t | default dict -}}
{{- $raw := dict -}}
{{- $texts := dict -}}
{{- range $pm := $tc.params -}}
{{- $v := $pm.default -}}
{{- if hasKey $given $pm.name -}}
{{- $v = index $given $pm.name | toString -}}
{{- end -}}
{{- $_ := set $raw $pm.name $v -}}
{{- if eq $pm.type "int" -}}
{{- $v = atoi $v | toString -}}
{{- end -}}
{{- $_ := set $texts $pm.name $v -}}
{{- end -}}
{{- $variant := dict -}}
{{- range $v := $tc.variants -}}
{{- $match := true -}}
{{- range $k, $want := $v.when | default dict -}}
{{- $match = and $match (eq (index $raw $k) $want) -}}
{{- end -}}
{{- if and $match (not $variant) -}}
{{- $variant = $v -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "check" $tc "raw" $raw "texts" $texts "variant" $variant) -}}
{{- end -}}

{{- /* graft.guarantee.esc: a string as the content of a CEL string literal. */ -}}
{{- define "graft.guarantee.esc" -}}
{{- toJson . | trimPrefix "\"" | trimSuffix "\"" -}}
{{- end -}}

{{- /* graft.guarantee.items: JSON list, the items of a list parameter's value. */ -}}
{{- define "graft.guarantee.items" -}}
{{- $out := list -}}
{{- if ne . "" -}}
{{- range splitList "," . -}}
{{- $out = append $out (trim .) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /* graft.guarantee.fill (dict s tm image): skeleton s with the markers
filled with the values of tm (graft.guarantee.template), constants; image
is the image condition of a refused template's container. */ -}}
{{- define "graft.guarantee.fill" -}}
{{- $s := .s -}}
{{- $tm := .tm -}}
{{- if contains "@@" $s -}}
{{- $s = replace "@@image@@" (.image | default "false") $s -}}
{{- range $pm := $tm.check.params -}}
{{- $t := index $tm.texts $pm.name -}}
{{- $s = replace (printf "@@v:%s@@" $pm.name) (include "graft.guarantee.esc" $t) $s -}}
{{- $s = replace (printf "@@t:%s@@" $pm.name) $t $s -}}
{{- $neg := ternary "false" "true" (eq $t "true") -}}
{{- $s = replace (printf "@@n:%s@@" $pm.name) $neg $s -}}
{{- $s = replace (printf "@@tn:%s@@" $pm.name) $neg $s -}}
{{- end -}}
{{- range $k, $r := $tm.variant.ranges | default list -}}
{{- $marker := printf "@@r:%d@@" $k -}}
{{- if contains $marker $s -}}
{{- $out := "" -}}
{{- range $i, $it := include "graft.guarantee.items" (index $tm.raw $r.param) | fromJsonArray -}}
{{- $body := $r.first -}}
{{- if and $i $r.rest -}}
{{- $body = $r.rest -}}
{{- end -}}
{{- range $piece := $body -}}
{{- if $piece.item -}}
{{- $out = print $out $it -}}
{{- else if $piece.param -}}
{{- $pt := index $tm.texts $piece.param -}}
{{- if $piece.not -}}
{{- $pt = ternary "false" "true" (eq $pt "true") -}}
{{- end -}}
{{- $out = print $out $pt -}}
{{- else -}}
{{- $out = print $out $piece.lit -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $s = replace $marker (include "graft.guarantee.esc" $out) $s -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $s -}}
{{- end -}}

{{- /* graft.guarantee.runtime (dict s P L image): skeleton s reading the
parameters from the policy's variables P (texts) and L (list items). */ -}}
{{- define "graft.guarantee.runtime" -}}
{{- .s | replace "@@image@@" (.image | default "false") | replace "@@P@@" .P | replace "@@L@@" .L -}}
{{- end -}}

{{- /* graft.guarantee.image (dict profile t check name): CEL on c, the
image rule of container name of a template export cannot compile: the
template's own images, the profile's value (else the default) of an image
parameter, and where a Pod's annotation may set it, what allowedImages
admit (any image without them). */ -}}
{{- define "graft.guarantee.image" -}}
{{- $cf := index .check.containers .name -}}
{{- $exact := $cf.images | default list -}}
{{- $any := false -}}
{{- $given := index .profile.params .t | default dict -}}
{{- $open := $cf.imageFollows | default false -}}
{{- range $param := $cf.imageParams | default list -}}
{{- $v := index $.check.imageDefaults $param -}}
{{- if hasKey $given $param -}}
{{- $v = index $given $param | toString -}}
{{- end -}}
{{- $exact = append $exact $v -}}
{{- if not (or (has (printf "%s.%s" $.t $param) $.profile.locked) (has (printf "*.%s" $param) $.profile.locked)) -}}
{{- $open = true -}}
{{- end -}}
{{- end -}}
{{- $cond := printf "c.?image.orValue(\"\") in %s" (toJson ($exact | uniq | sortAlpha)) -}}
{{- if $open -}}
{{- if .profile.allowedImages -}}
{{- $cond = printf "(%s || %s.exists(x, c.?image.orValue(\"\").startsWith(x)))" $cond (toJson .profile.allowedImages) -}}
{{- else -}}
{{- $cond = "true" -}}
{{- end -}}
{{- end -}}
{{- $cond -}}
{{- end -}}

{{- /* graft.guarantee.containerCheck (dict cc tm profile t): CEL on c,
every condition of container cc as the profile's values render it. */ -}}
{{- define "graft.guarantee.containerCheck" -}}
{{- $img := include "graft.guarantee.image" (dict "profile" .profile "t" .t "check" .tm.check "name" .cc.name) -}}
{{- $parts := list -}}
{{- range $f := .cc.fields -}}
{{- $parts = append $parts (include "graft.guarantee.fill" (dict "s" $f.expr "tm" $.tm "image" $img)) -}}
{{- end -}}
{{- range $v := .cc.volumes | default list -}}
{{- $parts = append $parts (printf "object.spec.?volumes.orValue([]).exists(v, v.name == %s && %s)" (toJson $v.field) (include "graft.guarantee.fill" (dict "s" $v.expr "tm" $.tm))) -}}
{{- end -}}
{{- join " &&\n  " $parts -}}
{{- end -}}

{{- /* graft.guarantee.domain: CEL holding for a key k in graft's domains. */ -}}
{{- define "graft.guarantee.domain" -}}
(k.startsWith("graft.dev/") || k.contains(".graft.dev/") && k.split("/")[0].endsWith(".graft.dev"))
{{- end -}}

{{- /* graft.guarantee.fast (dict root rev profile S): CEL holding for a
Pod graft injected at the revision with the profile's templates and
values and no parameter annotation: comparisons with constants only. */ -}}
{{- define "graft.guarantee.fast" -}}
{{- $root := .root -}}
{{- $rev := .rev -}}
{{- $prof := .profile -}}
{{- $parts := list -}}
{{- range $t := $prof.templates -}}
{{- $entry := printf "{\"name\":%s,\"revision\":%s," (toJson $t) (toJson $rev) -}}
{{- $parts = append $parts (printf "object.metadata.?annotations[?\"graft.dev/status\"].orValue(\"\").contains(%s)" (toJson $entry)) -}}
{{- end -}}
{{- $parts = append $parts "!(\"graft.dev/templates\" in object.metadata.?annotations.orValue({}))" -}}
{{- $akeys := list -}}
{{- $lkeys := list "graft.dev/injected" "graft.dev/inject" -}}
{{- $kchecks := list -}}
{{- $inits := list -}}
{{- $conts := list -}}
{{- $cchecks := list -}}
{{- range $t := $prof.templates -}}
{{- $tm := include "graft.guarantee.template" (dict "root" $root "rev" $rev "profile" $prof "t" $t) | fromJson -}}
{{- range $a := $tm.variant.annotations | default list -}}
{{- $akeys = append $akeys $a.key -}}
{{- if $a.expr -}}
{{- $kchecks = append $kchecks (printf "%s in object.metadata.?annotations.orValue({}) && object.metadata.annotations[%s] == %s" (toJson $a.key) (toJson $a.key) (include "graft.guarantee.fill" (dict "s" $a.expr "tm" $tm))) -}}
{{- end -}}
{{- end -}}
{{- range $l := $tm.variant.labels | default list -}}
{{- $lkeys = append $lkeys $l.key -}}
{{- if $l.expr -}}
{{- $kchecks = append $kchecks (printf "%s in object.metadata.?labels.orValue({}) && object.metadata.labels[%s] == %s" (toJson $l.key) (toJson $l.key) (include "graft.guarantee.fill" (dict "s" $l.expr "tm" $tm))) -}}
{{- end -}}
{{- end -}}
{{- range $cc := $tm.variant.containers | default list -}}
{{- $check := include "graft.guarantee.containerCheck" (dict "cc" $cc "tm" $tm "profile" $prof "t" $t) -}}
{{- if eq $cc.kind "container" -}}
{{- $conts = append $conts $cc.name -}}
{{- $cchecks = append $cchecks (printf "object.spec.containers.exists(c, c.name == %s &&\n  %s)" (toJson $cc.name) $check) -}}
{{- else -}}
{{- $inits = append $inits $cc.name -}}
{{- $cchecks = append $cchecks (printf "object.spec.?initContainers.orValue([]).exists(c, c.name == %s &&\n  %s)" (toJson $cc.name) $check) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $S := keys .S | sortAlpha | toJson -}}
{{- $parts = append $parts (printf "object.metadata.?annotations.orValue({}).all(k, !k.contains(\"graft.dev/\") || k == \"graft.dev/status\" || k in %s)" (toJson $akeys)) -}}
{{- $parts = append $parts (printf "object.metadata.?labels.orValue({}).all(k, !k.contains(\"graft.dev/\") || k in %s)" (toJson $lkeys)) -}}
{{- $parts = concat $parts $kchecks -}}
{{- $parts = append $parts (printf "object.spec.?initContainers.orValue([]).all(c, !(c.name in %s) || c.name in %s)" $S (toJson $inits)) -}}
{{- $parts = append $parts (printf "object.spec.containers.all(c, !(c.name in %s) || c.name in %s)" $S (toJson $conts)) -}}
{{- $parts = concat $parts $cchecks -}}
{{- printf "(%s)" (join " &&\n" $parts) -}}
{{- end -}}

{{- /* graft.guarantee.exempt (dict skipHostNetwork ann): CEL holding for
a Pod graft leaves alone without a record: a mirror Pod, a hostNetwork Pod
where a revision the policy accepts skips them, a Pod for another
operating system (inject/os.go). ann is the annotations' CEL. */ -}}
{{- define "graft.guarantee.exempt" -}}
"kubernetes.io/config.mirror" in {{ .ann }} ||
{{- if .skipHostNetwork }}
object.spec.?hostNetwork.orValue(false) ||
{{- end }}
object.spec.?os.name.orValue("linux") != "linux" ||
object.spec.?nodeSelector[?"kubernetes.io/os"].orValue("linux") != "linux" ||
[object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])].all(terms,
  size(terms) > 0 && terms.all(t, t.?matchExpressions.orValue([]).exists(e, e.key == "kubernetes.io/os" &&
    (e.operator == "In" && !("linux" in e.?values.orValue([])) || e.operator == "NotIn" && "linux" in e.?values.orValue([]) ||
     e.operator == "DoesNotExist"))))
{{- end -}}

{{- /* graft.guarantee.unchanged (dict S ann inits conts): CEL holding for
an UPDATE that changes no container under graft's names (a Pod UPDATE can
change only their images) and no annotation in graft's domains. */ -}}
{{- define "graft.guarantee.unchanged" -}}
{{ .inits }}.all(c, !(c.name in {{ .S }}) || oldObject.spec.?initContainers.orValue([]).exists(o, o.name == c.name && o.?image.orValue("") == c.?image.orValue(""))) &&
{{ .conts }}.all(c, !(c.name in {{ .S }}) || oldObject.spec.containers.exists(o, o.name == c.name && o.?image.orValue("") == c.?image.orValue(""))) &&
{{ .ann }}.all(k, !k.contains("graft.dev/") || k in oldObject.metadata.?annotations.orValue({}) && oldObject.metadata.annotations[k] == {{ .ann }}[k]) &&
oldObject.metadata.?annotations.orValue({}).all(k, !k.contains("graft.dev/") || k in {{ .ann }})
{{- end -}}

{{- /* graft.guarantee.policy (dict root profile group S): one policy and
its bindings. */ -}}
{{- define "graft.guarantee.policy" -}}
{{- $root := .root -}}
{{- $profile := .profile -}}
{{- $g := .group -}}
{{- $S := .S -}}
{{- $Slist := keys $S | sortAlpha | toJson -}}
{{- $skipHN := false -}}
{{- $fast := list -}}
{{- $unchecked := list -}}
{{- range $rev := $g.revisions -}}
{{- $prof := include "graft.guarantee.profile" (dict "root" $root "rev" $rev "profile" $profile) | fromJson -}}
{{- $skipHN = or $skipHN (not $prof.injectHostNetwork) -}}
{{- $fast = append $fast (include "graft.guarantee.fast" (dict "root" $root "rev" $rev "profile" $prof "S" $S)) -}}
{{- range $t := $prof.allowed -}}
{{- $tc := index $root.checks $rev $t -}}
{{- if $tc.refused -}}
{{- $u := list -}}
{{- range $v := $tc.variants -}}
{{- range $c := $v.containers -}}
{{- if $c.unchecked -}}
{{- $u = append $u (printf "%s: %s" $c.name (join ", " $c.unchecked)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $unchecked = append $unchecked (printf "template %s (revision %s): %s; compared: what every render shares%s" $t $rev $tc.refused (ternary (printf "; not compared: %s" (join "; " $u)) "" (gt (len $u) 0))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $ann := "object.metadata.?annotations.orValue({})" -}}
{{- $cond := printf "request.?subResource.orValue(\"\") == \"ephemeralcontainers\" ?\n  object.spec.?ephemeralContainers.orValue([]).exists(c, c.name in %s) :\n!(request.operation == \"UPDATE\" && %s ||\n%s ||\n%s)" $Slist
    (include "graft.guarantee.unchanged" (dict "S" $Slist "ann" $ann "inits" "object.spec.?initContainers.orValue([])" "conts" "object.spec.containers"))
    (join " ||\n" $fast)
    (include "graft.guarantee.exempt" (dict "skipHostNetwork" $skipHN "ann" $ann)) -}}
{{- $vars := include "graft.guarantee.variables" (dict "root" $root "profile" $profile "group" $g "S" $S "skipHostNetwork" $skipHN) | fromJsonArray -}}
{{- $annotations := dict "guarantee.graft.dev/profile" $profile "guarantee.graft.dev/revisions" (join "," $g.revisions) -}}
{{- if $unchecked -}}
{{- $_ := set $annotations "guarantee.graft.dev/unchecked" (join "\n" ($unchecked | uniq)) -}}
{{- end -}}
{{- $policy := dict
  "apiVersion" "admissionregistration.k8s.io/v1"
  "kind" "ValidatingAdmissionPolicy"
  "metadata" (dict "name" $g.name "labels" $root.labels "annotations" $annotations)
  "spec" (dict
    "failurePolicy" "Fail"
    "matchConstraints" (dict
      "resourceRules" (list (dict "operations" (list "CREATE" "UPDATE") "apiGroups" (list "") "apiVersions" (list "v1") "resources" (list "pods" "pods/ephemeralcontainers") "scope" "Namespaced"))
      "namespaceSelector" (dict "matchExpressions" (list
        (dict "key" "graft.dev/inject" "operator" "In" "values" (list $profile))
        (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" $root.excluded)))
      "objectSelector" (dict "matchExpressions" (list (dict "key" "graft.dev/inject" "operator" "NotIn" "values" (list "false"))))
      "matchPolicy" "Equivalent")
    "matchConditions" (list (dict "name" "not-graft-s" "expression" $cond))
    "variables" $vars
    "validations" (list (dict "expression" "variables.problem == \"\"" "messageExpression" "variables.problem" "reason" "Forbidden"))) -}}
{{ toJson $policy }}
{{- range $b := $g.bindings }}
{{- $expr := dict "key" "graft.dev/rev" "operator" $b.op -}}
{{- if $b.values -}}
{{- $_ := set $expr "values" $b.values -}}
{{- end }}
---
{{ toJson (dict
  "apiVersion" "admissionregistration.k8s.io/v1"
  "kind" "ValidatingAdmissionPolicyBinding"
  "metadata" (dict "name" $b.name "labels" $root.labels)
  "spec" (dict
    "policyName" $g.name
    "validationActions" $root.validationActions
    "matchResources" (dict "namespaceSelector" (dict "matchExpressions" (list $expr))))) }}
{{- end }}
---
{{- end -}}

{{- /* graft.guarantee.unknownRevision: the policy for namespaces whose
graft.dev/rev names neither a revision nor a tag: no webhook calls graft
there, so every Pod graft would not leave alone is refused, saying so. */ -}}
{{- define "graft.guarantee.unknownRevision" -}}
{{- $name := printf "%s-injection-required-known-revision" .service -}}
{{- $known := concat .revisions (.tags | default list) -}}
{{- $ann := "object.metadata.?annotations.orValue({})" -}}
{{- $exempt := printf "%s ||\n(\"graft.dev/templates\" in %s && %s[\"graft.dev/templates\"].replace(\",\", \"\").trim() == \"\")" (include "graft.guarantee.exempt" (dict "skipHostNetwork" true "ann" $ann)) $ann $ann -}}
{{- $msg := printf "\"namespace \" + request.namespace + \" is labelled graft.dev/rev=\" + namespaceObject.metadata.labels[\"graft.dev/rev\"] + %s + request.namespace + %s"
    (toJson (printf ", which is neither a revision nor a tag graft serves (revisions: %s; tags: %s), so no graft webhook was called for this Pod: label the namespace with one of them (kubectl label namespace " (join ", " .revisions) (ternary (join ", " .tags) "none" (gt (len .tags) 0))))
    (toJson " graft.dev/rev=<revision or tag> --overwrite), or remove the label for the default revision.") -}}
{{- $policy := dict
  "apiVersion" "admissionregistration.k8s.io/v1"
  "kind" "ValidatingAdmissionPolicy"
  "metadata" (dict "name" $name "labels" .labels "annotations" (dict "guarantee.graft.dev/revisions" ""))
  "spec" (dict
    "failurePolicy" "Fail"
    "matchConstraints" (dict
      "resourceRules" (list (dict "operations" (list "CREATE") "apiGroups" (list "") "apiVersions" (list "v1") "resources" (list "pods") "scope" "Namespaced"))
      "namespaceSelector" (dict "matchExpressions" (list
        (dict "key" "graft.dev/inject" "operator" "In" "values" .profiles)
        (dict "key" "graft.dev/rev" "operator" "Exists")
        (dict "key" "graft.dev/rev" "operator" "NotIn" "values" $known)
        (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" .excluded)))
      "objectSelector" (dict "matchExpressions" (list (dict "key" "graft.dev/inject" "operator" "NotIn" "values" (list "false"))))
      "matchPolicy" "Equivalent")
    "matchConditions" (list (dict "name" "not-exempt" "expression" (printf "!(%s)" $exempt)))
    "validations" (list (dict "expression" "false" "messageExpression" $msg "reason" "Forbidden"))) -}}
{{ toJson $policy }}
---
{{ toJson (dict
  "apiVersion" "admissionregistration.k8s.io/v1"
  "kind" "ValidatingAdmissionPolicyBinding"
  "metadata" (dict "name" $name "labels" .labels)
  "spec" (dict "policyName" $name "validationActions" .validationActions)) }}
{{- end -}}

{{- /* graft.guarantee.rule (dict pm profile t raw v): CEL string, "" when
v (CEL) is a value the profile admits for parameter pm of template t,
else the rule it breaks: the parameter's own (export), then the
profile's guards, in the engine's words (inject/guard.go): a locked
parameter keeps the profile's value raw, a value may need no Pod Security
level above podSecurity.maxLevel, an image must be one allowedImages
admit (at a boundary: /, : or @; no .. or empty path segment). */ -}}
{{- define "graft.guarantee.rule" -}}
{{- $own := replace "@@VALUE@@" .v .pm.rule -}}
{{- $guards := list -}}
{{- if or (has (printf "%s.%s" .t .pm.name) .profile.locked) (has (printf "*.%s" .pm.name) .profile.locked) -}}
{{- $guards = append $guards (printf "%s != %s ? %s" .v (toJson .raw) (toJson (printf "parameter %s of template %s is locked by profile %q" .pm.name .t .profileName))) -}}
{{- end -}}
{{- $rank := dict "restricted" 0 "baseline" 1 "privileged" 2 -}}
{{- $max := get $rank .profile.maxLevel | default 0 -}}
{{- range $val, $lvl := .pm.podSecurity | default dict -}}
{{- if gt (get $rank $lvl | default 3) $max -}}
{{- $guards = append $guards (printf "%s == %s ? %s" $.v (toJson $val) (toJson (printf "template %s with %s=%q needs Pod Security level %s, and profile %q allows up to %s (podSecurity.maxLevel)" $.t $.pm.name $val $lvl $.profileName $.profile.maxLevel))) -}}
{{- end -}}
{{- end -}}
{{- if and .pm.image .profile.allowedImages -}}
{{- $ok := printf "!%s.contains(\"..\") && !%s.contains(\"//\") && %s.exists(a, %s == a || %s.startsWith(a) && (a.endsWith(\"/\") || a.endsWith(\":\") || a.endsWith(\"@\") || %s.substring(size(a), size(a) + 1) in [\"/\", \":\", \"@\"]))" .v .v (toJson .profile.allowedImages) .v .v .v -}}
{{- $guards = append $guards (printf "!(%s) ? %s" $ok (toJson (printf "the image is not one profile %q allows (allowedImages: %s)" .profileName (join ", " .profile.allowedImages)))) -}}
{{- end -}}
{{- if $guards -}}
{{- printf "(%s != \"\" ? %s : %s : \"\")" $own $own (join " : " $guards) -}}
{{- else -}}
{{- $own -}}
{{- end -}}
{{- end -}}

{{- /* graft.guarantee.when (dict v P): CEL holding when the parameters in
P (a CEL map of texts) select variant v. */ -}}
{{- define "graft.guarantee.when" -}}
{{- $c := list -}}
{{- range $k, $want := .v.when | default dict -}}
{{- $c = append $c (printf "%s[%s] == %s" $.P (toJson $k) (toJson $want)) -}}
{{- end -}}
{{- if $c -}}
{{- printf "(%s)" (join " && " $c) -}}
{{- else -}}
true
{{- end -}}
{{- end -}}

{{- /* graft.guarantee.variables (dict root profile group S
skipHostNetwork): JSON list of the policy's variables, which compute
"problem": "" for a Pod the guarantee admits, else why it does not,
naming the container and the field. They run only for the Pods the
matchCondition does not pass. */ -}}
{{- define "graft.guarantee.variables" -}}
{{- $root := .root -}}
{{- $profile := .profile -}}
{{- $g := .group -}}
{{- $S := .S -}}
{{- $Slist := keys $S | sortAlpha -}}
{{- $hint := " Remove it from the Pod's manifest (graft adds its own), and if a mutating webhook after graft changed it, exclude graft's containers from that webhook." -}}
{{- $fresh := " Remove graft.dev/status and the label graft.dev/injected from the Pod's manifest (they were copied from another Pod or written by hand) and create it again: graft injects its own." -}}
{{- $vars := list
  (dict "name" "ann" "expression" "object.metadata.?annotations.orValue({})")
  (dict "name" "lab" "expression" "object.metadata.?labels.orValue({})")
  (dict "name" "rec" "expression" "variables.ann[?\"graft.dev/status\"].orValue(\"\")")
  (dict "name" "inits" "expression" "object.spec.?initContainers.orValue([])")
  (dict "name" "conts" "expression" "object.spec.containers")
  (dict "name" "savols" "expression" (printf "object.spec.?volumes.orValue([]).filter(v, v.name.startsWith(\"kube-api-access-\") && size(v) == 2 && has(v.projected) && v.projected == %s).map(v, v.name)" (include "graft.guarantee.saProjected" .)))
  (dict "name" "eph" "expression" (printf "request.?subResource.orValue(\"\") == \"ephemeralcontainers\" ? object.spec.?ephemeralContainers.orValue([]).filter(c, c.name in %s).map(c, c.name) : []" (toJson $Slist)))
  (dict "name" "unchanged" "expression" (printf "request.operation == \"UPDATE\" &&\n%s" (include "graft.guarantee.unchanged" (dict "S" (toJson $Slist) "ann" "variables.ann" "inits" "variables.inits" "conts" "variables.conts"))))
  (dict "name" "exempt" "expression" (printf "%s ||\n(\"graft.dev/templates\" in variables.ann && variables.ann[\"graft.dev/templates\"].replace(\",\", \"\").trim() == \"\")" (include "graft.guarantee.exempt" (dict "skipHostNetwork" .skipHostNetwork "ann" "variables.ann")))) -}}
{{- $revs := $g.revisions -}}
{{- $revExpr := toJson (first $revs) -}}
{{- range $i, $r := $revs -}}
{{- if $i -}}
{{- $revExpr = printf "variables.rec.contains(%s) ? %s : %s" (toJson (printf "\"revision\":%s" (toJson $r))) (toJson $r) $revExpr -}}
{{- end -}}
{{- end -}}
{{- $vars = append $vars (dict "name" "rev" "expression" $revExpr) -}}
{{- $anyKeep := false -}}
{{- range $r := $revs -}}
{{- $prof := include "graft.guarantee.profile" (dict "root" $root "rev" $r "profile" $profile) | fromJson -}}
{{- $anyKeep = or $anyKeep $prof.keep -}}
{{- end -}}
{{- $vars = append $vars (dict "name" "kept" "expression" (ternary "variables.rec.contains(\"\\\"kept\\\":[\") ? variables.rec.split(\"\\\"kept\\\":[\")[1].split(\"]\")[0] : \"\"" "\"\"" $anyKeep)) -}}
{{- $problem := "\"\"" -}}
{{- range $ri, $r := $revs -}}
{{- $prof := include "graft.guarantee.profile" (dict "root" $root "rev" $r "profile" $profile) | fromJson -}}
{{- $sfx := printf "_%d" $ri -}}
{{- $plan := printf "variables.plan%s" $sfx -}}
{{- $vars = append $vars (dict "name" (printf "sel%s" $sfx) "expression" "\"graft.dev/templates\" in variables.ann ? variables.ann[\"graft.dev/templates\"].split(\",\").map(s, s.trim()).filter(s, s != \"\") : []") -}}
{{- $vars = append $vars (dict "name" (printf "selbad%s" $sfx) "expression" (printf "variables.sel%s.filter(s, !(s in %s))" $sfx (toJson $prof.allowed))) -}}
{{- $vars = append $vars (dict "name" (printf "plan%s" $sfx) "expression" (printf "\"graft.dev/templates\" in variables.ann && size(variables.selbad%s) == 0 ? variables.sel%s : %s" $sfx $sfx (toJson $prof.templates))) -}}
{{- /* Per template the profile may inject: its parameters' texts, list items, and (deny) the first bad annotation. */ -}}
{{- $tms := dict -}}
{{- $keyChecks := list -}}
{{- $annKeys := list -}}
{{- $labKeys := list -}}
{{- $paramProblems := list -}}
{{- range $j, $t := $prof.allowed -}}
{{- $tm := include "graft.guarantee.template" (dict "root" $root "rev" $r "profile" $prof "t" $t) | fromJson -}}
{{- $P := printf "variables.p%s_%d" $sfx $j -}}
{{- $L := printf "variables.l%s_%d" $sfx $j -}}
{{- $_ := set $tms $t (dict "tm" $tm "P" $P "L" $L) -}}
{{- $R := printf "variables.r%s_%d" $sfx $j -}}
{{- $rules := list -}}
{{- $entries := list -}}
{{- $lists := list -}}
{{- range $pm := $tm.check.params -}}
{{- $key := printf "graft.dev/%s.%s" $t $pm.name -}}
{{- $v := printf "variables.ann[%s]" (toJson $key) -}}
{{- $rules = append $rules (printf "%s: (%s in variables.ann ? %s : \"\")" (toJson $key) (toJson $key) (include "graft.guarantee.rule" (dict "pm" $pm "profile" $prof "profileName" $profile "t" $t "raw" (index $tm.raw $pm.name) "v" $v))) -}}
{{- $entries = append $entries (printf "%s: (%s in variables.ann && %s[%s] == \"\" ? %s : %s)" (toJson $pm.name) (toJson $key) $R (toJson $key) (replace "@@VALUE@@" $v $pm.text) (toJson (index $tm.texts $pm.name))) -}}
{{- if eq $pm.type "list" -}}
{{- $lists = append $lists (printf "%s: (%s[%s] == \"\" ? [] : %s[%s].split(\",\").map(it, it.trim()))" (toJson $pm.name) $P (toJson $pm.name) $P (toJson $pm.name)) -}}
{{- end -}}
{{- end -}}
{{- $vars = append $vars (dict "name" (printf "r%s_%d" $sfx $j) "expression" (printf "{%s}" (join ",\n " $rules))) -}}
{{- $vars = append $vars (dict "name" (printf "p%s_%d" $sfx $j) "expression" (printf "{%s}" (join ",\n " $entries))) -}}
{{- if $lists -}}
{{- $vars = append $vars (dict "name" (printf "l%s_%d" $sfx $j) "expression" (printf "{%s}" (join ", " $lists))) -}}
{{- end -}}
{{- if not $prof.lenient -}}
{{- $pfx := printf "graft.dev/%s." $t -}}
{{- $vars = append $vars (dict "name" (printf "pp%s_%d" $sfx $j) "expression" (printf "variables.ann.filter(k, k.startsWith(%s)).sort().map(k, k in %s ?\n (%s[k] != \"\" ? \"annotation \" + k + \"=\" + strings.quote(variables.ann[k]) + \": \" + %s[k] : \"\") :\n \"annotation \" + k + %s + strings.quote(k.substring(%d))).filter(m, m != \"\")" (toJson $pfx) $R $R $R (toJson (printf ": template %s has no parameter " $t)) (len $pfx))) -}}
{{- $paramProblems = append $paramProblems (printf "%s in %s && size(variables.pp%s_%d) > 0 ? variables.pp%s_%d[0]" (toJson $t) $plan $sfx $j $sfx $j) -}}
{{- end -}}
{{- /* The keys the template renders for this Pod's values, and their values. */ -}}
{{- $active := printf "%s in %s" (toJson $t) $plan -}}
{{- if $prof.keep -}}
{{- $active = printf "%s && !%s.exists(n, variables.kept.contains(\"\\\"\" + n + \"\\\"\"))" $active (toJson (keys $tm.check.containers | sortAlpha)) -}}
{{- end -}}
{{- range $kind, $rks := dict "annotation" ($tm.check.runtime.annotations | default list) "label" ($tm.check.runtime.labels | default list) -}}
{{- $m := ternary "variables.ann" "variables.lab" (eq $kind "annotation") -}}
{{- range $a := $rks -}}
{{- $when := replace "@@P@@" $P $a.when -}}
{{- $term := printf "(%s && %s ? [%s] : [])" $active $when (toJson $a.key) -}}
{{- if eq $kind "annotation" -}}
{{- $annKeys = append $annKeys $term -}}
{{- else -}}
{{- $labKeys = append $labKeys $term -}}
{{- end -}}
{{- if $a.value -}}
{{- $val := include "graft.guarantee.runtime" (dict "s" $a.value "P" $P "L" $L) -}}
{{- $keyChecks = append $keyChecks (printf "%s && %s && !(%s in %s && %s[%s] == %s) ? (%s in %s ? %s + strings.quote(%s[%s]) + %s + strings.quote(%s) + %s : %s)"
    $active $when (toJson $a.key) $m $m (toJson $a.key) $val
    (toJson $a.key) $m (toJson (printf "%s %s=" $kind $a.key)) $m (toJson $a.key) (toJson (printf " is not what template %s renders for this Pod (" $t)) $val (toJson "): graft writes it; remove it from the Pod's manifest.")
    (toJson (printf "%s %s, which template %s renders for this Pod, is missing: a mutating admission step after graft removed it." $kind $a.key $t))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* Keys in graft's domains the Pod may not set. */ -}}
{{- $domain := include "graft.guarantee.domain" . -}}
{{- $vars = append $vars (dict "name" (printf "badAnn%s" $sfx) "expression" (printf "variables.ann.filter(k, %s && !(k == \"graft.dev/status\" || k == \"graft.dev/templates\" || k.startsWith(\"graft.dev/\") && k.substring(10).contains(\".\") || k in %s)).sort()" $domain (join " + " ($annKeys | default (list "[]"))))) -}}
{{- $labAllowed := ternary "[\"graft.dev/injected\", \"graft.dev/inject\", \"graft.dev/rev\"]" "[\"graft.dev/injected\", \"graft.dev/inject\"]" $prof.podRevision -}}
{{- $vars = append $vars (dict "name" (printf "badLab%s" $sfx) "expression" (printf "variables.lab.filter(k, %s && !(k in %s || k in %s)).sort()" $domain $labAllowed (join " + " ($labKeys | default (list "[]"))))) -}}
{{- $keys := list (printf "size(variables.badAnn%s) > 0 ? \"annotation \" + variables.badAnn%s[0] + %s" $sfx $sfx (toJson " is in graft's domain: a Pod may set only graft.dev/templates and graft.dev/<template>.<parameter> there, and graft writes the others. Remove it from the Pod's manifest.")) -}}
{{- $keys = append $keys (printf "size(variables.badLab%s) > 0 ? \"label \" + variables.badLab%s[0] + %s" $sfx $sfx (toJson (printf " is in graft's domain: a Pod may set only graft.dev/inject%s there, and graft writes the others. Remove it from the Pod's manifest." (ternary " and graft.dev/rev" "" $prof.podRevision)))) -}}
{{- $keys = concat $keys $keyChecks -}}
{{- $vars = append $vars (dict "name" (printf "keys%s" $sfx) "expression" (printf "%s :\n\"\"" (join " :\n" $keys))) -}}
{{- /* Per container name: graft's, or why not. */ -}}
{{- $cprobs := list -}}
{{- range $k, $n := $Slist -}}
{{- $owners := list -}}
{{- range $o := get $S $n -}}
{{- if has $o $prof.allowed -}}
{{- $owners = append $owners $o -}}
{{- end -}}
{{- end -}}
{{- $present := printf "(variables.inits.exists(c, c.name == %s) || variables.conts.exists(c, c.name == %s))" (toJson $n) (toJson $n) -}}
{{- $kind := printf "(variables.inits.exists(c, c.name == %s) ? \"init container \" : \"container \")" (toJson $n) -}}
{{- $expr := "" -}}
{{- if not $owners -}}
{{- $expr = printf "%s ? %s + %s : \"\"" $present $kind (toJson (printf "%s is named like a sidecar of template %s, which profile %s never injects: graft did not add it. Rename the container." $n (join ", " (get $S $n)) $profile)) -}}
{{- else -}}
{{- if gt (len $owners) 1 -}}
{{- fail (printf "guarantee: profile %s: container %s is injected by templates %s" $profile $n (join " and " $owners)) -}}
{{- end -}}
{{- $t := first $owners -}}
{{- $x := get $tms $t -}}
{{- $rc := dict -}}
{{- range $c := $x.tm.check.runtime.containers -}}
{{- if eq $c.name $n -}}
{{- $rc = $c -}}
{{- end -}}
{{- end -}}
{{- $E := printf "variables.e%s_%d" $sfx $k -}}
{{- $vars = append $vars (dict "name" (printf "e%s_%d" $sfx $k) "expression" (include "graft.guarantee.runtime" (dict "s" $rc.expected "P" $x.P "L" $x.L))) -}}
{{- $when := replace "@@P@@" $x.P $rc.when -}}
{{- $notKept := "true" -}}
{{- if $prof.keep -}}
{{- $notKept = printf "!%s.exists(n, variables.kept.contains(\"\\\"\" + n + \"\\\"\"))" (toJson (keys $x.tm.check.containers | sortAlpha)) -}}
{{- end -}}
{{- $whats := list -}}
{{- if $rc.image -}}
{{- $whats = append $whats (printf "[%s ? \"\" : \"field image\"]" (include "graft.guarantee.image" (dict "profile" $prof "t" $t "check" $x.tm.check "name" $n))) -}}
{{- end -}}
{{- $whats = append $whats (printf "%s.filter(f, f == \"volumeMounts\" ? !(%s) : (f in c) != (f in %s) || f in c && c[f] != %s[f]).map(f, \"field \" + f)" (toJson $rc.fields) (include "graft.guarantee.mounts" $E) $E $E) -}}
{{- range $vol := $rc.volumes | default list -}}
{{- $whats = append $whats (printf "[!(%s) || object.spec.?volumes.orValue([]).exists(v, v.name == %s && %s) ? \"\" : %s]" (replace "@@P@@" $x.P $vol.when) (toJson $vol.name) (include "graft.guarantee.runtime" (dict "s" $vol.check "P" $x.P "L" $x.L)) (toJson (printf "the volume %s it mounts" $vol.name))) -}}
{{- end -}}
{{- $list := ternary "variables.inits" "variables.conts" (ternary true false (eq (toString $rc.init) "true")) -}}
{{- $other := ternary "variables.conts" "variables.inits" (ternary true false (eq (toString $rc.init) "true")) -}}
{{- $wrongList := ternary (printf "container %s is not graft's: template %s adds it as an init container.%s" $n $t $hint) (printf "init container %s is not graft's: template %s adds it as a container.%s" $n $t $hint) (eq (toString $rc.init) "true") -}}
{{- $diff := printf "%s.filter(c, c.name == %s).map(c, (%s).filter(w, w != \"\")).map(w, size(w) == 0 ? \"\" : %s + %s + \" is not graft's: \" + w[0] + %s)[0]"
    $list (toJson $n) (join " + " $whats) $kind (toJson $n) (toJson (printf " is not what template %s renders for this Pod (revision %s, profile %s).%s" $t $r $profile $hint)) -}}
{{- $expr = printf "%s ?\n (%s ? \"\" :\n  !(%s in %s) ? %s + %s + %s.join(\", \") + %s :\n  !(%s) ? %s + %s :\n  %s.exists(c, c.name == %s) ? %s :\n  %s) :\n %s in %s && %s && %s ? %s : \"\""
    $present
    (ternary (printf "!(%s)" $notKept) "false" $prof.keep)
    (toJson $t) $plan $kind (toJson (printf "%s is named like a sidecar of template %s, which graft does not inject into this Pod (profile %s; its templates: " $n $t $profile)) $plan (toJson "): graft did not add it. Rename the container.")
    $when $kind (toJson (printf "%s is not graft's: template %s renders no such container for this Pod's parameters.%s" $n $t $hint))
    $other (toJson $n) (toJson $wrongList)
    $diff
    (toJson $t) $plan $notKept $when (toJson (printf "graft adds %s %s (template %s) to this Pod, but the Pod leaving admission lacks it: a mutating admission step after graft removed it. Check the other mutating webhooks and MutatingAdmissionPolicies that change Pods in this namespace; the Pod is refused because it would run without graft's sidecars." (ternary "init container" "container" (eq (toString $rc.init) "true")) $n $t)) -}}
{{- end -}}
{{- $vars = append $vars (dict "name" (printf "c%s_%d" $sfx $k) "expression" $expr) -}}
{{- $cprobs = append $cprobs (printf "variables.c%s_%d != \"\" ? variables.c%s_%d" $sfx $k $sfx $k) -}}
{{- end -}}
{{- /* The revision's verdict, first problem first. */ -}}
{{- $chain := list (printf "variables.rec == \"\" ? \"graft did not inject this Pod, and namespace \" + request.namespace + %s" (toJson (printf " requires it (label graft.dev/inject=%s). Check that graft is running (kubectl -n %s get pods) and create the Pod again, or opt the Pod out with the label graft.dev/inject: \"false\"." $profile $root.namespace))) -}}
{{- if not $prof.lenient -}}
{{- $chain = append $chain (printf "size(variables.selbad%s) > 0 ? \"annotation graft.dev/templates=\" + strings.quote(variables.ann[\"graft.dev/templates\"]) + \": template \" + strings.quote(variables.selbad%s[0]) + %s" $sfx $sfx (toJson (printf " is not allowed here (allowed: %s)" (join ", " $prof.allowed)))) -}}
{{- end -}}
{{- $keptT := "false" -}}
{{- if $prof.keep -}}
{{- $keptT = "variables.kept.contains(\"\\\"\" + t + \"\\\"\")" -}}
{{- end -}}
{{- $unrecorded := printf "%s.filter(t, !variables.rec.contains(\"{\\\"name\\\":\\\"\" + t + %s))" $plan (toJson (printf "\",\"revision\":%s," (toJson $r))) -}}
{{- if $prof.keep -}}
{{- $unrecorded = printf "%s.filter(t, !variables.rec.contains(\"{\\\"name\\\":\\\"\" + t + %s) && !variables.c%s_kept.exists(k, k == t))" $plan (toJson (printf "\",\"revision\":%s," (toJson $r))) $sfx -}}
{{- $keptMap := dict -}}
{{- range $t := $prof.allowed -}}
{{- $x := get $tms $t -}}
{{- $_ := set $keptMap $t (keys $x.tm.check.containers | sortAlpha) -}}
{{- end -}}
{{- $vars = append $vars (dict "name" (printf "c%s_kept" $sfx) "expression" (printf "%s.filter(t, %s[t].exists(n, variables.kept.contains(\"\\\"\" + n + \"\\\"\")))" $plan (toJson $keptMap))) -}}
{{- end -}}
{{- $chain = append $chain (printf "size(%s) > 0 ? \"graft.dev/status records no template \" + %s[0] + %s" $unrecorded $unrecorded (toJson (printf " injected at revision %s, which serves this namespace, though profile %s injects it into this Pod: the record is not graft's.%s" $r $profile $fresh))) -}}
{{- $chain = concat $chain $paramProblems -}}
{{- $chain = concat $chain $cprobs -}}
{{- $chain = append $chain (printf "variables.keys%s != \"\" ? variables.keys%s" $sfx $sfx) -}}
{{- $vars = append $vars (dict "name" (printf "prob%s" $sfx) "expression" (printf "%s :\n\"\"" (join " :\n" $chain))) -}}
{{- if eq $ri 0 -}}
{{- $problem = printf "variables.prob%s" $sfx -}}
{{- else -}}
{{- $problem = printf "variables.rev == %s ? variables.prob%s : %s" (toJson $r) $sfx $problem -}}
{{- end -}}
{{- end -}}
{{- $vars = append $vars (dict "name" "problem" "expression" (printf "request.?subResource.orValue(\"\") == \"ephemeralcontainers\" ?\n  (size(variables.eph) > 0 ? \"ephemeral container \" + variables.eph[0] + %s : \"\") :\nvariables.exempt || variables.unchanged ? \"\" :\n%s" (toJson " takes the name of a sidecar graft's templates inject: an ephemeral container may not take graft's names. Rename it.") $problem)) -}}
{{- toJson $vars -}}
{{- end -}}

{{- /* graft.guarantee.mounts: CEL on c, holding when its volumeMounts are
those of E (a CEL map of the compared fields) and maybe after them the
ServiceAccount plugin's token mount of its token volume (variables.savols). */ -}}
{{- define "graft.guarantee.mounts" -}}
("volumeMounts" in c ? c.volumeMounts : []) == {{ . }}[?"volumeMounts"].orValue([]) ||
  "volumeMounts" in c && size(c.volumeMounts) == size({{ . }}[?"volumeMounts"].orValue([])) + 1 &&
  lists.range(size({{ . }}[?"volumeMounts"].orValue([]))).all(i, c.volumeMounts[i] == {{ . }}["volumeMounts"][i]) &&
  [c.volumeMounts[size(c.volumeMounts) - 1]].all(m, m.name in variables.savols && size(m) == 3 && m.?readOnly.orValue(false) &&
    m.mountPath == "/var/run/secrets/kubernetes.io/serviceaccount")
{{- end -}}

{{- /* graft.guarantee.saProjected: the projected source of the token volume
the ServiceAccount admission plugin adds, as stored (export.SAProjected). */ -}}
{{- define "graft.guarantee.saProjected" -}}
{"defaultMode": dyn(420), "sources": dyn([{"serviceAccountToken": dyn({"expirationSeconds": dyn(3607), "path": dyn("token")})}, {"configMap": dyn({"items": dyn([{"key": dyn("ca.crt"), "path": dyn("ca.crt")}]), "name": dyn("kube-root-ca.crt")})}, {"downwardAPI": dyn({"items": dyn([{"fieldRef": dyn({"apiVersion": dyn("v1"), "fieldPath": dyn("metadata.namespace")}), "path": dyn("namespace")}])})}])}
{{- end -}}
