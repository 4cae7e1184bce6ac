package templates

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParamParse(t *testing.T) {
	str := Param{Name: "s", Type: TypeString, Default: "abc", Pattern: "^[a-z]+$"}
	free := Param{Name: "s", Type: TypeString}
	num := Param{Name: "n", Type: TypeInt, Default: "5", Min: "1", Max: "10"}
	boolean := Param{Name: "b", Type: TypeBool, Default: "false"}
	qty := Param{Name: "q", Type: TypeQuantity, Default: "100m", Min: "10m", Max: "2"}
	enum := Param{Name: "e", Type: TypeEnum, Default: "info", Values: []string{"debug", "info", "off"}}
	dur := Param{Name: "d", Type: TypeDuration, Default: "5m", Min: "30s", Max: "1h"}
	list := Param{Name: "l", Type: TypeList, Default: "a", Min: "1", Max: "3", Pattern: "^[a-z]+$"}
	anyList := Param{Name: "l", Type: TypeList}

	tests := []struct {
		name    string
		p       Param
		raw     string
		want    any
		wantErr string
	}{
		{"string matches", str, "xyz", "xyz", ""},
		{"string breaks pattern", str, "x1", nil, "must match ^[a-z]+$"},
		{"string empty breaks pattern", str, "", nil, "must match ^[a-z]+$"},
		{"string without pattern takes anything", free, " a b ", " a b ", ""},

		{"int", num, "7", int64(7), ""},
		{"int at min", num, "1", int64(1), ""},
		{"int at max", num, "10", int64(10), ""},
		{"int below min", num, "0", nil, "must be at least 1"},
		{"int above max", num, "11", nil, "must be at most 10"},
		{"int not a number", num, "7x", nil, "must be an integer"},
		{"int float", num, "1.5", nil, "must be an integer"},
		{"int empty", num, "", nil, "must be an integer"},

		{"bool true", boolean, "true", true, ""},
		{"bool false", boolean, "false", false, ""},
		{"bool yes is not a bool", boolean, "yes", nil, `must be "true" or "false"`},
		{"bool is case sensitive", boolean, "True", nil, `must be "true" or "false"`},

		{"quantity", qty, "250m", "250m", ""},
		{"quantity keeps its spelling", qty, "0.25", "0.25", ""},
		{"quantity at min", qty, "10m", "10m", ""},
		{"quantity at max in other units", qty, "2000m", "2000m", ""},
		{"quantity below min", qty, "1m", nil, "must be at least 10m"},
		{"quantity above max", qty, "2001m", nil, "must be at most 2"},
		{"quantity unparsable", qty, "lots", nil, "must be a Kubernetes quantity such as 100m or 64Mi"},

		{"enum", enum, "debug", "debug", ""},
		{"enum off stays a string", enum, "off", "off", ""},
		{"enum unknown", enum, "trace", nil, "must be one of debug, info, off"},
		{"enum is case sensitive", enum, "INFO", nil, "must be one of debug, info, off"},

		{"duration", dur, "90s", "90s", ""},
		{"duration at min", dur, "30s", "30s", ""},
		{"duration at max", dur, "60m", "60m", ""},
		{"duration below min", dur, "29s", nil, "must be at least 30s"},
		{"duration above max", dur, "61m", nil, "must be at most 1h"},
		{"duration without unit", dur, "90", nil, "must be a duration such as 30s or 5m"},

		{"list", list, "a,bc", []string{"a", "bc"}, ""},
		{"list trims spaces", list, " a , b ", []string{"a", "b"}, ""},
		{"list too short", list, "", nil, "must have at least 1 items"},
		{"list too long", list, "a,b,c,d", nil, "must have at most 3 items"},
		{"list item breaks pattern", list, "a,B", nil, `item "B" must match ^[a-z]+$`},
		{"list empty item", list, "a,,b", nil, "must be a comma-separated list without empty items"},
		{"list empty", anyList, "", []string(nil), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			if err := p.init(); err != nil {
				t.Fatalf("init: %v", err)
			}
			got, err := p.Parse(tc.raw)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Parse(%q) = %v, %v; want error %q", tc.raw, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.raw, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q) = %#v, want %#v", tc.raw, got, tc.want)
			}
		})
	}
}

func TestParamDeclaration(t *testing.T) {
	tests := []struct {
		name    string
		p       Param
		wantErr string
	}{
		{"name not lowerCamelCase", Param{Name: "Log-level", Type: TypeString}, `parameter "Log-level": name must be lowerCamelCase letters and digits`},
		{"name too long", Param{Name: "a" + strings.Repeat("b", 63), Type: TypeString}, "name must be lowerCamelCase"},
		{"unknown type", Param{Name: "x", Type: "float"}, `parameter x: unknown type "float"`},
		{"enum without values", Param{Name: "x", Type: TypeEnum}, "parameter x: enum needs values"},
		{"bad pattern", Param{Name: "x", Type: TypeString, Pattern: "("}, "parameter x: pattern: error parsing regexp"},
		{"min on a bool", Param{Name: "x", Type: TypeBool, Default: "true", Min: "1"}, `parameter x: min "1": min/max apply to int, quantity, duration and list only`},
		{"min on a string", Param{Name: "x", Type: TypeString, Max: "1"}, `parameter x: max "1": min/max apply to int, quantity, duration and list only`},
		{"bad int bound", Param{Name: "x", Type: TypeInt, Default: "1", Max: "ten"}, `parameter x: max "ten": strconv.ParseInt`},
		{"bad quantity bound", Param{Name: "x", Type: TypeQuantity, Default: "1", Min: "big"}, `parameter x: min "big": quantities must match`},
		{"bad duration bound", Param{Name: "x", Type: TypeDuration, Default: "1s", Min: "soon"}, `parameter x: min "soon": time: invalid duration`},
		{"default breaks a rule", Param{Name: "x", Type: TypeInt, Default: "0", Min: "1"}, `parameter x: default "0": must be at least 1`},
		{"default not in enum", Param{Name: "x", Type: TypeEnum, Default: "b", Values: []string{"a"}}, `parameter x: default "b": must be one of a`},
		{"missing default of an int", Param{Name: "x", Type: TypeInt}, `parameter x: default "": must be an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			err := p.init()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("init() = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestValuesErrors checks the messages a Pod's author sees: the annotation,
// the value and the rule it breaks.
func TestValuesErrors(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		template  string
		overrides map[string]string
		wantErr   string
	}{
		{"mesh-proxy", map[string]string{"concurrency": "0"}, `annotation graft.dev/mesh-proxy.concurrency="0": must be at least 1`},
		{"mesh-proxy", map[string]string{"cpuLimit": "16"}, `annotation graft.dev/mesh-proxy.cpuLimit="16": must be at most 8`},
		{"mesh-proxy", map[string]string{"logLevel": "verbose"}, `annotation graft.dev/mesh-proxy.logLevel="verbose": must be one of trace, debug, info, warning, error, critical, off`},
		{"mesh-proxy", map[string]string{"excludeInboundPorts": "80,65536"}, `annotation graft.dev/mesh-proxy.excludeInboundPorts="80,65536": item "65536" must match`},
		{"mesh-proxy", map[string]string{"holdApplicationUntilProxyStarts": "no"}, `annotation graft.dev/mesh-proxy.holdApplicationUntilProxyStarts="no": must be "true" or "false"`},
		{"log-shipper", map[string]string{"path": "relative/dir"}, `annotation graft.dev/log-shipper.path="relative/dir": must match`},
		{"log-shipper", map[string]string{"volumeSizeLimit": "1Ti"}, `annotation graft.dev/log-shipper.volumeSizeLimit="1Ti": must be at most 20Gi`},
		{"otel-agent", map[string]string{"samplingRatio": "1.5"}, `annotation graft.dev/otel-agent.samplingRatio="1.5": must match`},
		{"otel-agent", map[string]string{"memoryLimit": "lots"}, `annotation graft.dev/otel-agent.memoryLimit="lots": must be a Kubernetes quantity such as 100m or 64Mi`},
		{"secrets-agent", map[string]string{"refreshInterval": "10s"}, `annotation graft.dev/secrets-agent.refreshInterval="10s": must be at least 30s`},
		{"secrets-agent", map[string]string{"secretPaths": ""}, `annotation graft.dev/secrets-agent.secretPaths="": must have at least 1 items`},
		{"secrets-agent", map[string]string{"secretPaths": "a/../../etc"}, `annotation graft.dev/secrets-agent.secretPaths="a/../../etc": item "a/../../etc" must match`},
		{"secrets-agent", map[string]string{"color": "red"}, `template secrets-agent has no parameter "color"`},
	}
	for _, tc := range tests {
		tm, ok := s.Get(tc.template)
		if !ok {
			t.Fatalf("no template %s", tc.template)
		}
		_, err := tm.Values(tc.overrides)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%s %v: error %v, want %q...", tc.template, tc.overrides, err, tc.wantErr)
		}
		var pe *ParamError
		if strings.HasPrefix(tc.wantErr, "annotation ") && !errors.As(err, &pe) {
			t.Errorf("%s %v: %T is not a *ParamError", tc.template, tc.overrides, err)
		}
	}
}
