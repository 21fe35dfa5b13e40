package integration

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// Auth off must be asked for: the pods would not start otherwise.
	if out, err := run(t, ".", helm, "template", "r", chartDir, "--kube-version", kubeVersion,
		"--set", "ticketKey.value=k", "--set", "auth.enabled=false"); err == nil || !strings.Contains(out, "insecureNoAuth") {
		t.Fatalf("rendering with auth off and without insecureNoAuth must fail naming insecureNoAuth:\n%s", out)
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
	secrets := map[string]map[string]string{}
	var configs map[string]any
	var deployments []map[string]any
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
			configs, _ = doc["data"].(map[string]any)
		case "Deployment":
			checkPods(t, doc)
			deployments = append(deployments, doc)
		case "Secret":
			name, _ := dig(doc, "metadata", "name").(string)
			secrets[name] = map[string]string{}
			data, _ := doc["data"].(map[string]any)
			for k, v := range data {
				b, err := base64.StdEncoding.DecodeString(fmt.Sprint(v))
				if err != nil {
					t.Fatalf("secret %s key %s: %v", name, k, err)
				}
				secrets[name][k] = string(b)
			}
		}
	}
	for _, d := range deployments {
		checkCommandLine(t, d, configs, secrets)
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
		cmd.Env = append(os.Environ(), "POD_IP=10.0.0.7", "S3_ACCESS_KEY_ID=k", "S3_SECRET_ACCESS_KEY=s",
			"ICEFLOE_ADMIN_PASSWORD_HASH=$2a$10$Q19HngC4fFFuCATwXaUgU.auYiS/F8zZvVZYG52yfuj3z/vwbZZge") // bcrypt of change-me
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

// checkCommandLine runs a Deployment's container command line — its args,
// its config file from the ConfigMap, its environment from the rendered
// Secrets — through the binary with --check: the flag parser and the
// start-up checks (ticket key, auth:, listeners allowed without auth)
// must pass, so the pod starts. With its config's auth: removed, the same
// command line must pass only with --insecure-no-auth.
func checkCommandLine(t *testing.T, d map[string]any, configs map[string]any, secrets map[string]map[string]string) {
	t.Helper()
	bin := icefloeBin(t)
	c := dig(d, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	dir := t.TempDir()
	var args []string
	var config string
	for _, a := range c["args"].([]any) {
		arg := fmt.Sprint(a)
		if name, ok := strings.CutPrefix(arg, "/etc/icefloe/"); ok {
			text, _ := configs[name].(string)
			if text == "" {
				t.Fatalf("args name %s, which the ConfigMap lacks", arg)
			}
			// The pod's own data folder, writable here.
			text = strings.ReplaceAll(text, "data_dir: /var/lib/icefloe", "data_dir: "+filepath.Join(dir, "data"))
			config = filepath.Join(dir, name)
			if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			arg = config
		}
		args = append(args, arg)
	}
	env := os.Environ()
	for _, e := range c["env"].([]any) {
		em := e.(map[string]any)
		name := fmt.Sprint(em["name"])
		switch {
		case dig(em, "valueFrom", "secretKeyRef") != nil:
			sec, key := fmt.Sprint(dig(em, "valueFrom", "secretKeyRef", "name")), fmt.Sprint(dig(em, "valueFrom", "secretKeyRef", "key"))
			v, ok := secrets[sec][key]
			switch {
			case !ok && secrets[sec] != nil:
				t.Fatalf("env %s: the chart's secret %s has no key %s", name, sec, key)
			case !ok:
				// A Secret the operator made (an existingSecret value).
				v = "operator-secret-" + key
			}
			env = append(env, name+"="+v)
		case dig(em, "valueFrom", "fieldRef") != nil:
			env = append(env, name+"=10.0.0.7")
		default:
			env = append(env, fmt.Sprintf("%s=%v", name, em["value"]))
		}
	}
	env = append(env, "S3_ACCESS_KEY_ID=k", "S3_SECRET_ACCESS_KEY=s")
	runCheck := func(args []string) (string, error) {
		cmd := exec.Command(bin, append(args, "--check")...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := runCheck(args); err != nil {
		t.Fatalf("%s: the pod's command line does not start: %v\n%s", strings.Join(args, " "), err, out)
	}
	if !slices.Contains(args, "--insecure-no-auth") {
		// The check is the one that refuses an open listener: the same
		// command line without auth: fails it.
		text, _ := os.ReadFile(config)
		i := strings.Index(string(text), "\nauth:\n")
		if i < 0 {
			t.Fatalf("%s: neither auth: nor --insecure-no-auth:\n%s", config, text)
		}
		if err := os.WriteFile(config, text[:i+1], 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := runCheck(args); err == nil || !strings.Contains(out, "--insecure-no-auth") {
			t.Fatalf("%s without auth: passed --check: %v\n%s", strings.Join(args, " "), err, out)
		}
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
