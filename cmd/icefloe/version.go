package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// buildVersion is set at link time (-ldflags "-X main.buildVersion=v1.2.3");
// empty, the module's version from the build info is used.
var buildVersion string

// engineModules are the dependencies --version names, by module path.
var engineModules = map[string]string{
	"github.com/duckdb/duckdb-go/v2": "duckdb-go",
	"github.com/apache/iceberg-go":   "iceberg-go",
	"github.com/apache/arrow-go/v18": "arrow-go",
}

// version is the binary's version and those of the engines it embeds:
// "v0.3.0 (duckdb-go v2.10506.0, iceberg-go v0.7.0, arrow-go v18.8.0, go1.26.8)".
func version() string {
	v := buildVersion
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var parts []string
	if ok {
		for _, d := range info.Deps {
			if label, ok := engineModules[d.Path]; ok {
				parts = append(parts, label+" "+d.Version)
			}
		}
	}
	parts = append(parts, runtime.Version())
	return v + " (" + strings.Join(parts, ", ") + ")"
}
