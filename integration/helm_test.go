package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Versions of the chart's test tools, installed from the Go module proxy.
const (
	helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"
	kedaModule = "github.com/kedacore/keda/v2@v2.17.0"
	// kubeVersion is the Kubernetes version charts are rendered for.
	kubeVersion = "1.33.0"
)

const chartDir = "../deploy/helm/icefloe"

// ensureHelm returns the helm binary, installing it with go install when
// the one in GOPATH/bin is missing or another version.
func ensureHelm(t *testing.T) string {
	t.Helper()
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "helm")
	if out, err := exec.Command(helm, "version", "--template", "{{.Version}}").Output(); err == nil && strings.HasPrefix(string(out), "v3.22") {
		return helm
	}
	if out, err := exec.Command("go", "install", helmModule).CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", helmModule, err, out)
	}
	return helm
}

// kedaCRD returns KEDA's ScaledObject CRD from its Go module.
func kedaCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", kedaModule).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", kedaModule, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s", kedaModule, out)
	}
	return filepath.Join(m.Dir, "config", "crd", "bases", "keda.sh_scaledobjects.yaml")
}

func run(t *testing.T, dir string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestHelmChart lints the chart and renders it with every values file of
// its ci/ folder; each rendering must pass the offline Kubernetes schema
// check (deploy/helm/check), its config files `icefloe config check`,
// and the chart's own promises: the grace period outlasts the drain,
// memory requests come from the budget, probes use the health service,
// KEDA replaces the HPA.
func TestHelmChart(t *testing.T) {
	helm := ensureHelm(t)
	crd := kedaCRD(t)
	checker := filepath.Join(t.TempDir(), "check")
	if out, err := run(t, "../deploy/helm/check", "go", "build", "-o", checker, "."); err != nil {
		t.Fatalf("build the manifest check: %v\n%s", err, out)
	}
	if out, err := run(t, ".", checker, "-crd", crd, "../deploy/helm/check/testdata/invalid.yaml"); err == nil ||
		!strings.Contains(out, `unknown field "spec.clusterIp"`) || !strings.Contains(out, `unknown field "spec.minReplicas"`) {
		t.Fatalf("the manifest check passed invalid manifests:\n%s", out)
	}
	if out, err := run(t, ".", helm, "template", "r", chartDir, "--kube-version", kubeVersion); err == nil || !strings.Contains(out, "ticketKey.value") {
		t.Fatalf("rendering without a ticket key must fail naming ticketKey.value:\n%s", out)
	}
	values, _ := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if len(values) < 3 {
		t.Fatalf("values files: %v", values)
	}
	for _, v := range values {
		t.Run(filepath.Base(v), func(t *testing.T) {
			if out, err := run(t, ".", helm, "lint", "--strict", chartDir, "-f", v, "--kube-version", kubeVersion); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
			out, err := run(t, ".", helm, "template", "rel", chartDir, "-f", v, "--namespace", "data", "--kube-version", kubeVersion)
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			rendered := filepath.Join(t.TempDir(), "rendered.yaml")
			if err := os.WriteFile(rendered, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if res, err := run(t, ".", checker, "-crd", crd, rendered); err != nil {
				t.Fatalf("manifests invalid: %v\n%s", err, res)
			}
			checkRendered(t, out, strings.Contains(v, "keda"), strings.Contains(v, "dashboard"))
		})
	}
}

// checkRendered checks the chart's promises on one rendering.
func checkRendered(t *testing.T, rendered string, keda, dashboard bool) {
	t.Helper()
	kinds := map[string]int{}
	dec := yaml.NewDecoder(strings.NewReader(rendered))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc == nil {
			continue
		}
		kind, _ := doc["kind"].(string)
		kinds[kind]++
		switch kind {
		case "ConfigMap":
			if name, _ := dig(doc, "metadata", "name").(string); strings.HasSuffix(name, "-dashboard") {
				checkDashboardMap(t, doc)
				break
			}
			checkConfigs(t, doc)
		case "Deployment":
			checkPods(t, doc)
		}
	}
	want := map[string]int{"Deployment": 2, "Service": 2, "PodDisruptionBudget": 2, "ConfigMap": 1}
	if keda {
		want["ScaledObject"], want["HorizontalPodAutoscaler"] = 1, 0
	}
	if dashboard {
		want["ConfigMap"]++
	}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if keda && !strings.Contains(rendered, "icefloe_queued_queries") {
		t.Error("the ScaledObject does not scale on icefloe_queued_queries")
	}
}

// checkDashboardMap checks the dashboard's ConfigMap: the sidecar's
// label, the namespace asked for, and the dashboard file as it is.
func checkDashboardMap(t *testing.T, cm map[string]any) {
	t.Helper()
	want, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := dig(cm, "data", "icefloe.json").(string); got != strings.TrimRight(string(want), "\n") {
		t.Errorf("the dashboard ConfigMap holds %d bytes, not the %d of %s", len(got), len(want), dashboardFile)
	}
	if dig(cm, "metadata", "labels", "grafana_dashboard") != "1" || dig(cm, "metadata", "namespace") != "monitoring" {
		t.Errorf("dashboard ConfigMap metadata: %v", cm["metadata"])
	}
}

// checkConfigs runs `icefloe config check` on the rendered config files.
func checkConfigs(t *testing.T, cm map[string]any) {
	t.Helper()
	bin := icefloeBin(t)
	data, _ := cm["data"].(map[string]any)
	for _, name := range []string{"coordinator.yaml", "worker.yaml"} {
		text, _ := data[name].(string)
		if !strings.Contains(text, "http_listen: 0.0.0.0:9090\n") {
			t.Errorf("%s: no http_listen on the metrics port:\n%s", name, text)
		}
		f := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "config", "check", f)
		cmd.Env = append(os.Environ(), "POD_IP=10.0.0.7", "S3_ACCESS_KEY_ID=k", "S3_SECRET_ACCESS_KEY=s")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("icefloe config check %s: %v\n%s\n%s", name, err, out, text)
		}
	}
}

// checkPods checks a Deployment's pod template.
func checkPods(t *testing.T, d map[string]any) {
	t.Helper()
	spec := dig(d, "spec", "template", "spec").(map[string]any)
	grace, _ := spec["terminationGracePeriodSeconds"].(int)
	c := spec["containers"].([]any)[0].(map[string]any)
	args := c["args"].([]any)
	if grace <= 25 {
		t.Errorf("%s: terminationGracePeriodSeconds %d does not outlast the 25s drain", args[0], grace)
	}
	if dig(c, "readinessProbe", "grpc", "port") == nil || dig(c, "livenessProbe", "grpc", "service") != "liveness" {
		t.Errorf("%s: probes are not the gRPC health service's: %v %v", args[0], c["readinessProbe"], c["livenessProbe"])
	}
	req, lim := dig(c, "resources", "requests", "memory"), dig(c, "resources", "limits", "memory")
	if req == nil || req != lim {
		t.Errorf("%s: memory request %v, limit %v: want both from the budget", args[0], req, lim)
	}
	// Prometheus scrapes the pod's HTTP listener, the port its config
	// listens on.
	ann := dig(d, "spec", "template", "metadata", "annotations")
	port, _ := dig(ann, "prometheus.io/port").(string)
	var named bool
	for _, p := range c["ports"].([]any) {
		if pm := p.(map[string]any); pm["name"] == "http" && fmt.Sprint(pm["containerPort"]) == port {
			named = true
		}
	}
	if dig(ann, "prometheus.io/scrape") != "true" || !named {
		t.Errorf("%s: not scraped on its http port: annotations %v, ports %v", args[0], ann, c["ports"])
	}
}

func dig(m any, path ...string) any {
	for _, p := range path {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}
