#!/usr/bin/env bash
# builder.sh VERSION writes the builder module of kube-apiserver VERSION
# (v1.NN.P) into kubernetes-1.NN/ beside this script: k8s.io/kubernetes
# replaces its staging modules with paths that exist only in its own
# repository, so each is pinned to its published release of the same minor
# (v0.NN.P), as e2e/tools/kube-apiserver does for the harness's version.
# go mod tidy then pins everything else in go.sum. Run it to add a minor or
# move one to a newer patch; commit what it writes.
set -euo pipefail
version=${1:?usage: builder.sh v1.NN.P}
[[ $version =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "builder.sh: $version: want v1.NN.P" >&2; exit 1; }
minor=${BASH_REMATCH[1]} patch=${BASH_REMATCH[2]}
go=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/kubernetes-1.$minor
mod=$(cd / && $go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[[ -n $mod ]] || { echo "builder.sh: k8s.io/kubernetes@$version: no go.mod" >&2; exit 1; }
mkdir -p "$dir"
{
	echo "// Builder module of kube-apiserver $version for make e2e-matrix; written"
	echo "// by ../builder.sh $version (go mod tidy pins the rest)."
	echo "module github.com/graftdev/graft/e2e/tools/matrix/kubernetes-1.$minor"
	echo
	echo "go 1.26.0"
	echo
	echo "tool k8s.io/kubernetes/cmd/kube-apiserver"
	echo
	echo "require k8s.io/kubernetes $version"
	echo
	echo "replace ("
	# Every staging module k8s.io/kubernetes replaces with ./staging/...
	sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*$|\1|p' "$mod" | sort -u |
		while read -r m; do printf '\t%s => %s v0.%s.%s\n' "$m" "$m" "$minor" "$patch"; done
	echo ")"
} > "$dir/go.mod"
rm -f "$dir/go.sum"
(cd "$dir" && $go mod tidy)
echo "wrote $dir"
