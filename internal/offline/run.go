package offline

import (
	"cmp"
	"io"
	"net/http"

	"github.com/graftdev/graft/internal/manifest"
	"github.com/graftdev/graft/templates"
)

// Options are what graft inject and graft explain are told.
type Options struct {
	// Inputs are the files, directories and "-" (stdin) to read, in order.
	Inputs []string
	// Recursive reads the directories' subdirectories too.
	Recursive bool
	// Profile and Revision are assumed for namespaces whose labels are
	// unknown, as if labelled so ("": the configuration's defaults).
	Profile, Revision string
	// Config and TemplatesDir are the configuration file and the template
	// overlay, as given to graft serve.
	Config, TemplatesDir string
	// Namespace is for objects that name none ("": default).
	Namespace string
	// NamespaceLabels are the labels of the namespaces that have no
	// Namespace object in the input; nil when not given.
	NamespaceLabels map[string]string
	// Quiet says nothing on stderr but warnings and errors.
	Quiet bool
	// HTTP fetches the inputs that are URLs (nil: a default client).
	HTTP *http.Client
}

// Run is the input of one graft inject or explain: its manifests, read,
// and the engine and namespace selection their Pods go through.
type Run struct {
	admitter *admitter
	files    []*manifest.File
	docs     []*manifest.Document
	report   *Report
}

// Open does what inject and explain both do first: build the engine,
// read the input documents, and learn the namespaces' labels. What it
// has to say goes to stderr.
func Open(o Options, stdin io.Reader, stderr io.Writer) (*Run, error) {
	sel := &selector{flagLabels: o.NamespaceLabels}
	engine, err := NewEngine(o.Config, o.TemplatesDir, o.Profile, o.Revision)
	if err != nil {
		return nil, err
	}
	files, err := manifest.ReadInputs(o.Inputs, o.Recursive, manifest.Sources{Stdin: stdin, HTTP: o.HTTP})
	if err != nil {
		return nil, err
	}
	if err := manifest.NoObjectsError(files); err != nil {
		return nil, err
	}
	docs := manifest.AllDocuments(files)
	sel.defaultProfile, sel.profiles = engine.DefaultProfile(), engine.Profiles()
	sel.assumed = cmp.Or(o.Profile, sel.defaultProfile)
	sel.revision = o.Revision
	sel.declareNamespaces(docs)
	return &Run{
		admitter: &admitter{engine: engine, sel: sel, namespace: o.Namespace, params: templateParams(o.Config, o.TemplatesDir)},
		files:    files,
		docs:     docs,
		report:   NewReport(stderr, o.Quiet, docs),
	}, nil
}

// Files are the input files, with what Inject changed in them.
func (r *Run) Files() []*manifest.File { return r.files }

// Report is what the run has to say on stderr, held until its Flush.
func (r *Run) Report() *Report { return r.report }

// Inject injects into every Pod of the input, in place, as the webhook
// would, reporting each object and every warning; jsonOut says the
// output will be JSON, so the documents' text need not be kept. It
// returns every document's errors.
func (r *Run) Inject(jsonOut bool) error {
	r.admitter.jsonOut = jsonOut
	return injectDocuments(r.admitter, r.docs, r.report)
}

// templateParams lists the parameters of the templates of the
// configuration, for hints about misspelt ones, reading the templates
// the first time a hint needs them (loading them lints them: not a cost
// every run should pay); nil where they cannot be read.
func templateParams(configFile, templatesDir string) func(string) []string {
	var set *templates.Set
	loaded := false
	return func(name string) []string {
		if !loaded {
			loaded = true
			_, set, _ = LoadConfig(configFile, templatesDir)
		}
		if set == nil {
			return nil
		}
		t, ok := set.Get(name)
		if !ok {
			return nil
		}
		out := make([]string, len(t.Params))
		for i := range t.Params {
			out[i] = t.Params[i].Name
		}
		return out
	}
}
