//go:build tools

// Package deps pins the libraries the packages being built in parallel will
// import, so go.mod settles once. Removed when every import is in place.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/bytedance/sonic"
	_ "github.com/bytedance/sonic/ast"
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/spf13/cobra"
	_ "github.com/valyala/fasthttp"
	_ "github.com/valyala/fasthttp/fasthttputil"
	_ "github.com/wI2L/jsondiff"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "gomodules.xyz/jsonpatch/v2"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/plotutil"
	_ "gonum.org/v1/plot/vg"
	_ "k8s.io/api/admission/v1"
	_ "k8s.io/api/admission/v1beta1"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/api/batch/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "sigs.k8s.io/yaml"
)
