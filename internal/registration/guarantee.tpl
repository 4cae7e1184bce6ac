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

{{- /* graft.guarantee.allowedImage (dict v allowed): CEL on the string v,
whether an allowedImages entry admits it, as the engine decides
(imageref.Admits): equal to an entry, or continuing it at a boundary (/, :
or @), with no ".." nor empty path segment. */ -}}
{{- define "graft.guarantee.allowedImage" -}}
{{- printf "(!%s.contains(\"..\") && !%s.contains(\"//\") && %s.exists(a, %s == a || %s.startsWith(a) && (a.endsWith(\"/\") || a.endsWith(\":\") || a.endsWith(\"@\") || %s.substring(size(a), size(a) + 1) in [\"/\", \":\", \"@\"])))" .v .v (toJson .allowed) .v .v .v -}}
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
{{- $cond = printf "(%s || %s)" $cond (include "graft.guarantee.allowedImage" (dict "v" "c.?image.orValue(\"\")" "allowed" .profile.allowedImages)) -}}
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
{{- if ge (int .cc.size) 0 -}}
{{- $parts = append $parts (printf "size(c) == %d + (has(c.volumeMounts) ? 1 : 0)" (int .cc.size)) -}}
{{- end -}}
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
{{- $entries := list -}}
{{- range $t := $prof.templates -}}
{{- $entries = append $entries (printf "object.metadata.annotations[k].contains(%s)" (toJson (printf "{\"name\":%s,\"revision\":%s," (toJson $t) (toJson $rev)))) -}}
{{- end -}}
{{- $akv := dict -}}
{{- $anyValue := list -}}
{{- $lkeys := list "graft.dev/injected" "graft.dev/inject" -}}
{{- $lchecks := list -}}
{{- $inits := list -}}
{{- $conts := list -}}
{{- $cchecks := list -}}
{{- range $t := $prof.templates -}}
{{- $tm := include "graft.guarantee.template" (dict "root" $root "rev" $rev "profile" $prof "t" $t) | fromJson -}}
{{- range $a := $tm.variant.annotations | default list -}}
{{- if $a.expr -}}
{{- $_ := set $akv $a.key (include "graft.guarantee.fill" (dict "s" $a.expr "tm" $tm)) -}}
{{- else -}}
{{- $anyValue = append $anyValue $a.key -}}
{{- end -}}
{{- end -}}
{{- range $l := $tm.variant.labels | default list -}}
{{- $lkeys = append $lkeys $l.key -}}
{{- if $l.expr -}}
{{- $lchecks = append $lchecks (printf "%s == object.metadata.?labels[?%s].orValue(\"\\u0000\")" (include "graft.guarantee.fill" (dict "s" $l.expr "tm" $tm)) (toJson $l.key)) -}}
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
{{- /* graft's record names each template at the revision; the Pod's other
keys in graft's domains are exactly those the templates render, with
their values: one pass over the annotations builds them, one comparison
with a constant map checks them. (A refused template's key whose value
varies between renders is compared by name only.) */ -}}
{{- if eq (len $entries) 1 -}}
{{- $parts = append $parts (first $entries | replace "object.metadata.annotations[k]" "object.metadata.?annotations[?\"graft.dev/status\"].orValue(\"\")") -}}
{{- else -}}
{{- $parts = append $parts (printf "[object.metadata.?annotations[?\"graft.dev/status\"].orValue(\"\")].all(r, %s)" (join " && " $entries | replace "object.metadata.annotations[k]" "r")) -}}
{{- end -}}
{{- $kvs := list -}}
{{- range $k := keys $akv | sortAlpha -}}
{{- $kvs = append $kvs (printf "%s: %s" (toJson $k) (get $akv $k)) -}}
{{- end -}}
{{- range $k := $anyValue | sortAlpha -}}
{{- $kvs = append $kvs (printf "%s: \"\"" (toJson $k)) -}}
{{- end -}}
{{- $value := "v" -}}
{{- if $anyValue -}}
{{- $value = printf "k in %s ? \"\" : v" (toJson $anyValue) -}}
{{- end -}}
{{- $parts = append $parts (printf "{%s} == object.metadata.?annotations.orValue({}).transformMap(k, v, k.contains(\"graft.dev/\") && k != \"graft.dev/status\", %s)" (join ", " $kvs) $value) -}}
{{- $parts = append $parts (printf "object.metadata.?labels.orValue({}).all(k, !k.contains(\"graft.dev/\") || k in %s)" (toJson $lkeys)) -}}
{{- $parts = concat $parts $lchecks -}}
{{- $parts = append $parts (printf "object.spec.?initContainers.orValue([]).all(c, !(c.name in %s) || c.name in %s)" $S (toJson $inits)) -}}
{{- $parts = append $parts (printf "object.spec.containers.all(c, !(c.name in %s) || c.name in %s)" $S (toJson $conts)) -}}
{{- /* The token volumes the ServiceAccount plugin mounts into graft's
containers are its own (a Pod's own volume of that name is not). */ -}}
{{- $parts = append $parts (printf "object.spec.?volumes.orValue([]).all(v, !v.name.startsWith(\"kube-api-access-\") || %s)" (include "graft.guarantee.saVolume" "v")) -}}
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
    "validations" (list (dict "expression" "variables.problem == \"\"" "messageExpression" "string(variables.problem)" "reason" "Forbidden"))) -}}
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
{{- $ok := include "graft.guarantee.allowedImage" (dict "v" .v "allowed" .profile.allowedImages) -}}
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
matchCondition does not pass. The API server enters every declared
variable in a lazy map for each evaluation, the matchCondition's too, so
they are few: per revision the Pod's templates and each template's
parameter values; the rest is written out where it is used. */ -}}
{{- define "graft.guarantee.variables" -}}
{{- $root := .root -}}
{{- $profile := .profile -}}
{{- $g := .group -}}
{{- $S := .S -}}
{{- $Slist := keys $S | sortAlpha -}}
{{- $ann := "object.metadata.?annotations.orValue({})" -}}
{{- $lab := "object.metadata.?labels.orValue({})" -}}
{{- $rec := printf "%s[?\"graft.dev/status\"].orValue(\"\")" $ann -}}
{{- $inits := "object.spec.?initContainers.orValue([])" -}}
{{- $conts := "object.spec.containers" -}}
{{- $hint := " Remove it from the Pod's manifest (graft adds its own), and if a mutating webhook after graft changed it, exclude graft's containers from that webhook." -}}
{{- $fresh := " Remove graft.dev/status and the label graft.dev/injected from the Pod's manifest (they were copied from another Pod or written by hand) and create it again: graft injects its own." -}}
{{- $vars := list -}}
{{- $revs := $g.revisions -}}
{{- $revExpr := toJson (first $revs) -}}
{{- range $i, $r := $revs -}}
{{- if $i -}}
{{- $revExpr = printf "%s.contains(%s) ? %s : %s" $rec (toJson (printf "\"revision\":%s" (toJson $r))) (toJson $r) $revExpr -}}
{{- end -}}
{{- end -}}
{{- $kept := printf "(%s.contains(\"\\\"kept\\\":[\") ? %s.split(\"\\\"kept\\\":[\")[1].split(\"]\")[0] : \"\")" $rec $rec -}}
{{- $problem := "\"\"" -}}
{{- range $ri, $r := $revs -}}
{{- $prof := include "graft.guarantee.profile" (dict "root" $root "rev" $r "profile" $profile) | fromJson -}}
{{- $sfx := printf "_%d" $ri -}}
{{- $plan := printf "variables.plan%s" $sfx -}}
{{- $sel := printf "%s[\"graft.dev/templates\"].split(\",\").map(s, s.trim()).filter(s, s != \"\")" $ann -}}
{{- $selbad := printf "%s.filter(s, !(s in %s))" $sel (toJson $prof.allowed) -}}
{{- $vars = append $vars (dict "name" (printf "plan%s" $sfx) "expression" (printf "\"graft.dev/templates\" in %s && size(%s) == 0 ? %s : %s" $ann $selbad $sel (toJson $prof.templates))) -}}
{{- $checks := list (printf "%s == \"\" ? \"graft did not inject this Pod, and namespace \" + request.namespace + %s : \"\"" $rec (toJson (printf " requires it (label graft.dev/inject=%s). Check that graft is running (kubectl -n %s get pods) and create the Pod again, or opt the Pod out with the label graft.dev/inject: \"false\"." $profile $root.namespace))) -}}
{{- if not $prof.lenient -}}
{{- $checks = append $checks (printf "\"graft.dev/templates\" in %s && size(%s) > 0 ? \"annotation graft.dev/templates=\" + strings.quote(%s[\"graft.dev/templates\"]) + \": template \" + strings.quote(%s[0]) + %s : \"\"" $ann $selbad $ann $selbad (toJson (printf " is not allowed here (allowed: %s)" (join ", " $prof.allowed)))) -}}
{{- end -}}
{{- /* Each template the profile may inject: its parameters' values, and the keys it renders. */ -}}
{{- $tms := dict -}}
{{- $annKeys := list -}}
{{- $labKeys := list -}}
{{- $keyChecks := list -}}
{{- $keptMap := dict -}}
{{- range $j, $t := $prof.allowed -}}
{{- $tm := include "graft.guarantee.template" (dict "root" $root "rev" $r "profile" $prof "t" $t) | fromJson -}}
{{- $P := printf "variables.p%s_%d" $sfx $j -}}
{{- $L := printf "__L%s__" $P -}}
{{- $_ := set $tms $t (dict "tm" $tm "P" $P) -}}
{{- $_ := set $keptMap $t (keys $tm.check.containers | sortAlpha) -}}
{{- $entries := list -}}
{{- $chain := list -}}
{{- range $pm := $tm.check.params -}}
{{- $key := printf "graft.dev/%s.%s" $t $pm.name -}}
{{- $v := printf "%s[%s]" $ann (toJson $key) -}}
{{- $rule := include "graft.guarantee.rule" (dict "pm" $pm "profile" $prof "profileName" $profile "t" $t "raw" (index $tm.raw $pm.name) "v" $v) -}}
{{- $entries = append $entries (printf "%s: (%s in %s && %s == \"\" ? %s : %s)" (toJson $pm.name) (toJson $key) $ann $rule (replace "@@VALUE@@" $v $pm.text) (toJson (index $tm.texts $pm.name))) -}}
{{- $kr := include "graft.guarantee.rule" (dict "pm" $pm "profile" $prof "profileName" $profile "t" $t "raw" (index $tm.raw $pm.name) "v" (printf "%s[k]" $ann)) -}}
{{- $chain = append $chain (printf "k == %s ? [%s].map(r, r == \"\" ? \"\" : \"annotation \" + k + \"=\" + strings.quote(%s[k]) + \": \" + r)[0]" (toJson $key) $kr $ann) -}}
{{- end -}}
{{- $vars = append $vars (dict "name" (printf "p%s_%d" $sfx $j) "expression" (printf "{%s}" (join ",\n " $entries))) -}}
{{- $active := printf "%s in %s" (toJson $t) $plan -}}
{{- if $prof.keep -}}
{{- $active = printf "%s && !%s.exists(n, %s.contains(\"\\\"\" + n + \"\\\"\"))" $active (toJson (keys $tm.check.containers | sortAlpha)) $kept -}}
{{- end -}}
{{- if not $prof.lenient -}}
{{- $pfx := printf "graft.dev/%s." $t -}}
{{- $chain = append $chain (printf "\"annotation \" + k + %s + strings.quote(k.substring(%d))" (toJson (printf ": template %s has no parameter " $t)) (len $pfx)) -}}
{{- $checks = append $checks (printf "%s ? %s.filter(k, k.startsWith(%s)).sort().map(k,\n %s).filter(m, m != \"\").map(m, m) + [\"\"] : [\"\"]" $active $ann (toJson $pfx) (join " :\n " $chain) | printf "(%s)[0]") -}}
{{- end -}}
{{- range $kind, $rks := dict "annotation" ($tm.check.runtime.annotations | default list) "label" ($tm.check.runtime.labels | default list) -}}
{{- $m := ternary $ann $lab (eq $kind "annotation") -}}
{{- range $a := $rks -}}
{{- $when := replace "@@P@@" $P $a.when -}}
{{- $term := printf "(%s && %s ? [%s] : [])" $active $when (toJson $a.key) -}}
{{- if eq $kind "annotation" -}}
{{- $annKeys = append $annKeys $term -}}
{{- else -}}
{{- $labKeys = append $labKeys $term -}}
{{- end -}}
{{- if $a.value -}}
{{- $val := include "graft.guarantee.runtime" (dict "s" $a.value "P" $P "L" $L) | include "graft.guarantee.lists" -}}
{{- $keyChecks = append $keyChecks (printf "%s && %s && !(%s in %s && %s[%s] == %s) ? (%s in %s ? %s + strings.quote(%s[%s]) + %s + strings.quote(%s) + %s : %s) : \"\""
    $active $when (toJson $a.key) $m $m (toJson $a.key) $val
    (toJson $a.key) $m (toJson (printf "%s %s=" $kind $a.key)) $m (toJson $a.key) (toJson (printf " is not what template %s renders for this Pod (" $t)) $val (toJson "): graft writes it; remove it from the Pod's manifest.")
    (toJson (printf "%s %s, which template %s renders for this Pod, is missing: a mutating admission step after graft removed it." $kind $a.key $t))) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* The record names each template the Pod gets (not kept) at the revision. */ -}}
{{- $unrecorded := printf "%s.filter(t, !%s.contains(\"{\\\"name\\\":\\\"\" + t + %s))" $plan $rec (toJson (printf "\",\"revision\":%s," (toJson $r))) -}}
{{- if $prof.keep -}}
{{- $unrecorded = printf "%s.filter(t, !%s.contains(\"{\\\"name\\\":\\\"\" + t + %s) && !%s[t].exists(n, %s.contains(\"\\\"\" + n + \"\\\"\")))" $plan $rec (toJson (printf "\",\"revision\":%s," (toJson $r))) (toJson $keptMap) $kept -}}
{{- end -}}
{{- $checks = append $checks (printf "%s != \"\" ? %s.map(t, \"graft.dev/status records no template \" + t + %s) + [\"\"] : [\"\"]" $rec $unrecorded (toJson (printf " injected at revision %s, which serves this namespace, though profile %s injects it into this Pod: the record is not graft's.%s" $r $profile $fresh)) | printf "(%s)[0]") -}}
{{- /* Per container name: graft's, or why not. */ -}}
{{- range $k, $n := $Slist -}}
{{- $owners := list -}}
{{- range $o := get $S $n -}}
{{- if has $o $prof.allowed -}}
{{- $owners = append $owners $o -}}
{{- end -}}
{{- end -}}
{{- $present := printf "(%s.exists(c, c.name == %s) || %s.exists(c, c.name == %s))" $inits (toJson $n) $conts (toJson $n) -}}
{{- $kind := printf "(%s.exists(c, c.name == %s) ? \"init container \" : \"container \")" $inits (toJson $n) -}}
{{- if not $owners -}}
{{- $checks = append $checks (printf "%s ? %s + %s : \"\"" $present $kind (toJson (printf "%s is named like a sidecar of template %s, which profile %s never injects: graft did not add it. Rename the container." $n (join ", " (get $S $n)) $profile))) -}}
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
{{- $L := printf "__L%s__" $x.P -}}
{{- $E := include "graft.guarantee.runtime" (dict "s" $rc.expected "P" $x.P "L" $L) | include "graft.guarantee.lists" -}}
{{- $when := replace "@@P@@" $x.P $rc.when -}}
{{- $notKept := "true" -}}
{{- if $prof.keep -}}
{{- $notKept = printf "!%s.exists(n, %s.contains(\"\\\"\" + n + \"\\\"\"))" (toJson (keys $x.tm.check.containers | sortAlpha)) $kept -}}
{{- end -}}
{{- $whats := list -}}
{{- if $rc.image -}}
{{- $whats = append $whats (printf "[%s ? \"\" : \"field image\"]" (include "graft.guarantee.image" (dict "profile" $prof "t" $t "check" $x.tm.check "name" $n))) -}}
{{- end -}}
{{- $whats = append $whats (printf "%s.filter(f, f == \"volumeMounts\" ? !(%s) :\n  f == \"ports\" && object.spec.?hostNetwork.orValue(false) ? !(%s) :\n  (f in c) != (f in e) || f in c && e[f] != c[f]).map(f, \"field \" + f)" (toJson $rc.fields) (include "graft.guarantee.mounts" "e") (include "graft.guarantee.hostPorts" "e")) -}}
{{- range $vol := $rc.volumes | default list -}}
{{- $whats = append $whats (printf "[!(%s) || object.spec.?volumes.orValue([]).exists(v, v.name == %s && %s) ? \"\" : %s]" (replace "@@P@@" $x.P $vol.when) (toJson $vol.name) (include "graft.guarantee.runtime" (dict "s" $vol.check "P" $x.P "L" $L) | include "graft.guarantee.lists") (toJson (printf "the volume %s it mounts" $vol.name))) -}}
{{- end -}}
{{- $list := ternary $inits $conts (eq (toString $rc.init) "true") -}}
{{- $other := ternary $conts $inits (eq (toString $rc.init) "true") -}}
{{- $wrongList := ternary (printf "container %s is not graft's: template %s adds it as an init container.%s" $n $t $hint) (printf "init container %s is not graft's: template %s adds it as a container.%s" $n $t $hint) (eq (toString $rc.init) "true") -}}
{{- $diff := printf "[%s].map(e, %s.filter(c, c.name == %s).map(c, (%s).filter(w, w != \"\")))[0].map(w, size(w) == 0 ? \"\" : %s + %s + \" is not graft's: \" + w[0] + %s)[0]"
    $E $list (toJson $n) (join " + " $whats) $kind (toJson $n) (toJson (printf " is not what template %s renders for this Pod (revision %s, profile %s).%s" $t $r $profile $hint)) -}}
{{- $checks = append $checks (printf "%s ?\n (%s ? \"\" :\n  !(%s in %s) ? %s + %s + %s.join(\", \") + %s :\n  !(%s) ? %s + %s :\n  %s.exists(c, c.name == %s) ? %s :\n  %s) :\n %s in %s && %s && %s ? %s : \"\""
    $present
    (ternary (printf "!(%s)" $notKept) "false" $prof.keep)
    (toJson $t) $plan $kind (toJson (printf "%s is named like a sidecar of template %s, which graft does not inject into this Pod (profile %s; its templates: " $n $t $profile)) $plan (toJson "): graft did not add it. Rename the container.")
    $when $kind (toJson (printf "%s is not graft's: template %s renders no such container for this Pod's parameters.%s" $n $t $hint))
    $other (toJson $n) (toJson $wrongList)
    $diff
    (toJson $t) $plan $notKept $when (toJson (printf "graft adds %s %s (template %s) to this Pod, but the Pod leaving admission lacks it: a mutating admission step after graft removed it. Check the other mutating webhooks and MutatingAdmissionPolicies that change Pods in this namespace; the Pod is refused because it would run without graft's sidecars." (ternary "init container" "container" (eq (toString $rc.init) "true")) $n $t))) -}}
{{- end -}}
{{- end -}}
{{- /* Keys in graft's domains the Pod may not set, then the values of those graft renders. */ -}}
{{- $domain := include "graft.guarantee.domain" . -}}
{{- $badAnn := printf "%s.filter(k, %s && !(k == \"graft.dev/status\" || k == \"graft.dev/templates\" || k.startsWith(\"graft.dev/\") && k.substring(10).contains(\".\") || k in %s)).sort()" $ann $domain (join " + " ($annKeys | default (list "[]"))) -}}
{{- $checks = append $checks (printf "(%s.map(k, \"annotation \" + k + %s) + [\"\"])[0]" $badAnn (toJson " is in graft's domain: a Pod may set only graft.dev/templates and graft.dev/<template>.<parameter> there, and graft writes the others. Remove it from the Pod's manifest.")) -}}
{{- $labAllowed := ternary "[\"graft.dev/injected\", \"graft.dev/inject\", \"graft.dev/rev\"]" "[\"graft.dev/injected\", \"graft.dev/inject\"]" $prof.podRevision -}}
{{- $badLab := printf "%s.filter(k, %s && !(k in %s || k in %s)).sort()" $lab $domain $labAllowed (join " + " ($labKeys | default (list "[]"))) -}}
{{- $checks = append $checks (printf "(%s.map(k, \"label \" + k + %s) + [\"\"])[0]" $badLab (toJson (printf " is in graft's domain: a Pod may set only graft.dev/inject%s there, and graft writes the others. Remove it from the Pod's manifest." (ternary " and graft.dev/rev" "" $prof.podRevision)))) -}}
{{- $checks = concat $checks $keyChecks -}}
{{- /* The checks in variables of at most 40,000 characters each: the API
server compiles no expression over 100,000 code points. */ -}}
{{- $chunks := list -}}
{{- $cur := list -}}
{{- $size := 0 -}}
{{- range $c := $checks -}}
{{- if and $cur (gt (add $size (len $c)) 40000) -}}
{{- $chunks = append $chunks $cur -}}
{{- $cur = list -}}
{{- $size = 0 -}}
{{- end -}}
{{- $cur = append $cur $c -}}
{{- $size = add $size (len $c) -}}
{{- end -}}
{{- $chunks = append $chunks $cur -}}
{{- $refs := list -}}
{{- range $ci, $chunk := $chunks -}}
{{- $name := printf "checks%s_%d" $sfx $ci -}}
{{- $vars = append $vars (dict "name" $name "expression" (printf "[\n%s\n].filter(m, m != \"\")" (join ",\n" $chunk))) -}}
{{- $refs = append $refs (printf "variables.%s" $name) -}}
{{- end -}}
{{- $verdict := printf "(%s + [\"\"])[0]" (join " + " $refs) -}}
{{- if eq $ri 0 -}}
{{- $problem = $verdict -}}
{{- else -}}
{{- $problem = printf "(%s) == %s ? %s :\n%s" $revExpr (toJson $r) $verdict $problem -}}
{{- end -}}
{{- end -}}
{{- $eph := printf "object.spec.?ephemeralContainers.orValue([]).filter(c, c.name in %s).map(c, c.name)" (toJson $Slist) -}}
{{- $exempt := printf "%s ||\n(\"graft.dev/templates\" in %s && %s[\"graft.dev/templates\"].replace(\",\", \"\").trim() == \"\")" (include "graft.guarantee.exempt" (dict "skipHostNetwork" .skipHostNetwork "ann" $ann)) $ann $ann -}}
{{- $unchanged := include "graft.guarantee.unchanged" (dict "S" (toJson $Slist) "ann" $ann "inits" $inits "conts" $conts) -}}
{{- $vars = append $vars (dict "name" "problem" "expression" (printf "request.?subResource.orValue(\"\") == \"ephemeralcontainers\" ?\n  (%s.map(n, \"ephemeral container \" + n + %s) + [\"\"])[0] :\n%s ||\nrequest.operation == \"UPDATE\" && %s ? \"\" :\n%s" $eph (toJson " takes the name of a sidecar graft's templates inject: an ephemeral container may not take graft's names. Rename it.") $exempt $unchanged $problem)) -}}
{{- toJson $vars -}}
{{- end -}}

{{- /* graft.guarantee.lists: CEL s with each list placeholder __L<p>__["x"]
read from the texts of P: a list parameter's items. */ -}}
{{- define "graft.guarantee.lists" -}}
{{- regexReplaceAll "__L(variables\\.p_[0-9]+_[0-9]+)__\\[(\"[A-Za-z0-9]+\")\\]" . "(${1}[${2}] == \"\" ? [] : ${1}[${2}].split(\",\").map(it, it.trim()))" -}}
{{- end -}}

{{- /* graft.guarantee.mounts: CEL on c, holding when its volumeMounts are
those of E (a CEL map of the compared fields) and maybe after them the
ServiceAccount plugin's token mount of its token volume (variables.savols). */ -}}
{{- define "graft.guarantee.mounts" -}}
("volumeMounts" in c ? c.volumeMounts : []) == {{ . }}[?"volumeMounts"].orValue([]) ||
  "volumeMounts" in c && size(c.volumeMounts) == size({{ . }}[?"volumeMounts"].orValue([])) + 1 &&
  lists.range(size({{ . }}[?"volumeMounts"].orValue([]))).all(i, {{ . }}["volumeMounts"][i] == c.volumeMounts[i]) &&
  [c.volumeMounts[size(c.volumeMounts) - 1]].all(m, m.name.startsWith("kube-api-access-") && size(m) == 3 && m.?readOnly.orValue(false) &&
    m.mountPath == "/var/run/secrets/kubernetes.io/serviceaccount" &&
    object.spec.?volumes.orValue([]).exists(v, v.name == m.name && {{ include "graft.guarantee.saVolume" "v" }}))
{{- end -}}

{{- /* graft.guarantee.saVolume: CEL holding for the volume bound to . when
it is a token volume as the ServiceAccount plugin makes it: projected,
from a service account token, the cluster's CA (the ConfigMap
kube-root-ca.crt) and the Pod's namespace (downward API) and nothing
else: not a hostPath, Secret or other volume of the Pod's own under that
name, which the plugin would mount into graft's containers just the same.
(The tokens' audience and expiry are not compared: a Pod can ask for its
ServiceAccount's tokens anyway.) */ -}}
{{- define "graft.guarantee.saVolume" -}}
size({{ . }}) == 2 && has({{ . }}.projected) && {{ . }}.projected.sources.all(s, has(s.serviceAccountToken) || has(s.downwardAPI) || has(s.configMap) && s.configMap.name == "kube-root-ca.crt")
{{- end -}}


{{- /* graft.guarantee.hostPorts: CEL on c, holding when its ports are those
of E (a CEL map of the compared fields) but for the hostPort the API
server defaults to each containerPort in a hostNetwork Pod. */ -}}
{{- define "graft.guarantee.hostPorts" -}}
("ports" in c ? c.ports : []).map(p, [dyn(p.?name.orValue("")), dyn(p.containerPort), dyn(p.?protocol.orValue("")), dyn(p.?hostIP.orValue(""))]) ==
  {{ . }}[?"ports"].orValue([]).map(p, [dyn(p[?"name"].orValue("")), dyn(p["containerPort"]), dyn(p[?"protocol"].orValue("")), dyn(p[?"hostIP"].orValue(""))]) &&
  ("ports" in c ? c.ports : []).all(p, p.?hostPort.orValue(0) == 0 || p.hostPort == p.containerPort)
{{- end -}}
