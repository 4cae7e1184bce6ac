package main

// Each command's Example section: command lines a user can paste, each
// checked by TestExamplesParse against the command's own flags.

const rootExample = `  # What the webhook would do to a manifest, and why
  graft inject -f app.yaml
  graft explain -f app.yaml

  # Which graft this is
  graft version`

const serveExample = `  # Serve with a certificate and a configuration, as the shipped Deployment does
  graft serve --tls-cert /etc/graft/tls/tls.crt --tls-key /etc/graft/tls/tls.key --config /etc/graft/config/config.yaml

  # A self-signed certificate, on other ports, for a local API server
  graft serve --addr 127.0.0.1:9443 --admin-addr 127.0.0.1:9080 --log-level debug`

const injectExample = `  # Inject into the Pods of a manifest and apply it
  graft inject -f app.yaml | kubectl apply -f -

  # A directory and its subdirectories, as if in namespace shop, with a profile
  graft inject -R -f manifests/ -n shop --profile mesh-proxy

  # A manifest from a URL, with the cluster's configuration, as JSON
  graft inject -f https://example.com/app.yaml --config graft-config.yaml -o json

  # Rewrite the files in place (all or none)
  graft inject --in-place -f app.yaml -f db.yaml

  # As if the namespaces were labelled so
  graft inject -f app.yaml --namespace-labels graft.dev/inject=mesh-proxy`

const explainExample = `  # Why graft would (or would not) inject into the Pods of a manifest
  graft explain -f app.yaml

  # For machines
  graft explain -f app.yaml -o json

  # A Deployment in the cluster, in the kubeconfig context's namespace
  graft explain deploy/web

  # A Pod in namespace shop of another context
  graft explain pod/web-7d9c -n shop --context staging`

const uninjectExample = `  # Remove what graft added (graft.dev/status says what), to stdout
  graft uninject -f injected.yaml

  # In place, a whole directory
  graft uninject --in-place -R -f manifests/`

const auditExample = `  # The Pods of the kubeconfig context's namespace, one line each
  graft audit

  # Every namespace, per workload
  graft audit -A --workloads

  # In CI: exit 3 if a Pod of namespace shop lacks its sidecars or runs old ones
  graft audit -n shop --fail-on stale,missing,spoofed

  # As a Prometheus exporter, as deploy/components/audit runs it
  graft audit -A --serve :8080 --interval 5m`

const renderExample = `  # The fragment the built-in mesh-proxy template renders, with a parameter set
  graft render mesh-proxy --set cpuRequest=200m

  # A template of an overlay directory, as JSON
  graft render otel-agent --templates-dir ./templates -o json`

const templatesExample = `  graft templates list
  graft templates lint ./my-templates
  graft templates docs -o templates/README.md`

const templatesListExample = `  # The built-in templates
  graft templates list

  # What graft serves with a configuration and its template overlay, as JSON
  graft templates list --config graft-config.yaml --templates-dir ./templates -o json`

const templatesLintExample = `  # Check a directory of templates, as make lint-templates does the built-in ones
  graft templates lint ./my-templates`

const templatesDocsExample = `  # The built-in templates' reference, to stdout
  graft templates docs

  # A directory's templates, to a file
  graft templates docs --dir ./my-templates -o my-templates/README.md

  # In CI: fail if the file is stale
  graft templates docs --check -o templates/README.md`

const certsExample = `  # A CA and a serving certificate for graft in graft-system, for the self-signed overlay
  graft certs --out certs/ --kustomize

  # For a local API server reaching graft on 127.0.0.1
  graft certs --out certs/ --ip 127.0.0.1 --days 30`

const exportExample = `  # Compile the default profile into admission policies, and apply them
  graft export | kubectl apply --server-side -f -

  # Another profile of a configuration, with its template overlay
  graft export --profile mesh-proxy --config graft-config.yaml --templates-dir ./templates`

const webhooksExample = `  # The webhooks a configuration needs, for graft's Service in graft-system
  graft webhooks --config graft-config.yaml

  # For another Service and namespace
  graft webhooks --config graft-config.yaml --service graft-canary --namespace graft-canary`

const probeExample = `  # Check a running graft answers as the API server expects
  graft probe https://graft.graft-system.svc:443/inject --ca-file ca.crt

  # A local graft, with a shorter timeout
  graft probe https://127.0.0.1:8443/inject --ca-file certs/ca.crt --timeout 3s`

const versionExample = `  graft version

  # Also the version of the graft a cluster runs, through its admin port
  # (with kubectl -n graft-system port-forward deploy/graft 8080 running)
  graft version --server http://localhost:8080

  # For machines
  graft version -o json`

const rolloutExample = `  # The plan: which workloads run a stale sidecar or lack one (changes nothing)
  graft rollout -n shop

  # What the API server would say to each change, changing nothing
  graft rollout -n shop --dry-run=server

  # Carry it out in every namespace, two owners at a time, upgrading sidecar images in place where possible
  graft rollout -A --apply --yes --in-place --max-concurrent 2

  # Only the owners of Pods that lack their sidecars, as JSON
  graft rollout -n shop --classes missing -o json`

const watchdogExample = `  # As deploy/components/watchdog runs it, in the cluster
  graft watchdog --config /etc/graft/config/config.yaml --templates-dir /etc/graft/templates

  # Slower to act, and gentler
  graft watchdog --grace 5m --max-restarts-per-minute 5`

const guaranteeExample = `  # The guarantee policies of a configuration, applied after its webhooks
  # (server-side: a policy can outgrow what client-side apply keeps, 256 KiB)
  graft guarantee --config graft-config.yaml | kubectl apply --server-side -f -

  # What the policies compare of custom templates (the chart's policy.templateChecks)
  graft guarantee --checks --templates-dir ./templates`
