package refdocs

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/config"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
)

// configNode is the configuration file's shape with every default, read
// from config's and inject's types; skip leaves root keys out.
func configNode(root string, skip ...string) (*node, config.File, error) {
	src, err := readSource(root, "config", "inject", "templates")
	if err != nil {
		return nil, config.File{}, err
	}
	f, err := defaultedFile()
	if err != nil {
		return nil, config.File{}, err
	}
	rootDefaults, err := toJSONMap(f)
	if err != nil {
		return nil, config.File{}, err
	}
	// A profile's own defaults: those of a profile that sets only what it
	// must.
	probe := inject.Config{DefaultProfile: "p", Profiles: map[string]inject.Profile{"p": {Templates: []string{"t"}}}}
	probe, err = probe.Defaulted()
	if err != nil {
		return nil, config.File{}, fmt.Errorf("refdocs: %w", err)
	}
	profileDefaults, err := toJSONMap(probe.Profiles["p"])
	if err != nil {
		return nil, config.File{}, err
	}
	delete(profileDefaults, "templates")
	b := &builder{src: src, skip: map[string]bool{}, defaults: map[string]map[string]any{
		"":                rootDefaults,
		"profiles.<name>": profileDefaults,
	}}
	for _, k := range skip {
		b.skip[k] = true
	}
	n, err := b.build("config.File", "configuration", "")
	return n, f, err
}

// defaultedFile is what graft runs with when given no configuration file,
// every default filled in: what config/testdata/defaults.yaml pins.
func defaultedFile() (config.File, error) {
	f := config.Default()
	var err error
	if f.Config, err = f.Config.Defaulted(); err != nil {
		return f, fmt.Errorf("refdocs: defaults: %w", err)
	}
	if err := f.Server.Default(); err != nil {
		return f, fmt.Errorf("refdocs: defaults: %w", err)
	}
	return f, nil
}

// configReference is docs/reference/configuration.md.
func configReference(root string) ([]byte, error) {
	n, f, err := configNode(root)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Configuration reference\n\n")
	b.WriteString(generatedBy("the types of config/ and inject/ and their doc comments"))
	b.WriteString("graft reads one YAML file, `" + config.APIVersion + "` `" + config.Kind + "`: `graft serve\n" +
		"--" + names.FlagConfig + " FILE` watches and reloads it, and `graft inject`, `graft explain` and\n" +
		"`graft render` take the same file with `--" + names.FlagConfig + "`. The engine's settings are at\n" +
		"the top level, `graft serve`'s under `server:`. Parsing is strict: an unknown\n" +
		"key, a key given twice or a value of the wrong type is an error naming the file,\n" +
		"the line and the key (and, for a misspelt key, the nearest valid one). A file\n" +
		"without `profiles` gets the [built-in profiles](#built-in-profiles). Command-line\n" +
		"flags of `graft serve` win over `server:`. The Helm chart takes this file under\n" +
		"its `config` value.\n\n" +
		"A file that holds no configuration (empty, only comments or blank lines, or\n" +
		"`null`) is an error, at start and on a reload: give no `--" + names.FlagConfig + "` for the\n" +
		"built-in defaults. A reload that fails (such a file, a file cut short, any\n" +
		"error) is logged, counted in `graft_config_reloads_total{result=\"error\"}`, and\n" +
		"the running configuration keeps serving. Replace the file atomically: write the\n" +
		"new one beside it and rename it over the old one, as the kubelet does for a\n" +
		"mounted ConfigMap (it swaps a `..data` symlink). A file rewritten in place (an\n" +
		"editor saving in place, a shell's `>`) is empty or cut short for a moment; graft\n" +
		"waits for the writes to pause for 100 ms before it reads, and refuses an empty\n" +
		"or malformed file, but a file cut at a line break can be valid YAML that says\n" +
		"less than you meant.\n")
	writeSections(&b, n, "##", "Top level")

	b.WriteString("\n## Built-in profiles\n\n")
	fmt.Fprintf(&b, "What `profiles` holds when a file names none; `%s` is the default profile,\n"+
		"served on `/inject`, and each profile `P` is served on `/inject/P` for namespaces\n"+
		"labelled `graft.dev/inject=P`.\n\n", f.DefaultProfile)
	b.WriteString("| profile | templates, in injection order | a Pod may choose from |\n|---|---|---|\n")
	names := make([]string, 0, len(f.Profiles))
	for name := range f.Profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := f.Profiles[name]
		allowed := "—"
		if len(p.AllowedTemplates) > 0 {
			allowed = codeList(p.AllowedTemplates)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, codeList(p.Templates), allowed)
	}

	b.WriteString("\n## Every default\n\n")
	b.WriteString("graft's configuration when given no file, written out as a file\n" +
		"(`config/testdata/defaults.yaml` pins the same):\n\n")
	y, err := yaml.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("refdocs: %w", err)
	}
	fence(&b, "yaml", y)
	return b.Bytes(), nil
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = "`" + s + "`"
	}
	return strings.Join(out, ", ")
}

func generatedBy(from string) string {
	return "<!-- Generated by `go generate ./internal/refdocs` from " + from +
		"; edit those, not this file. -->\n\n"
}
