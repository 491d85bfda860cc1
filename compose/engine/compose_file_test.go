package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// composeFile is the part of docker-compose.yml that must match Up.
type composeFile struct {
	Name     string `yaml:"name"`
	Services map[string]struct {
		Image         string            `yaml:"image"`
		PullPolicy    string            `yaml:"pull_policy"`
		Init          bool              `yaml:"init"`
		Privileged    bool              `yaml:"privileged"`
		CapAdd        []string          `yaml:"cap_add"`
		Networks      []string          `yaml:"networks"`
		ContainerName string            `yaml:"container_name"`
		Hostname      string            `yaml:"hostname"`
		Labels        map[string]string `yaml:"labels"`
		Command       any               `yaml:"command"`
		Entrypoint    any               `yaml:"entrypoint"`
		Volumes       any               `yaml:"volumes"`
		Ports         any               `yaml:"ports"`
	} `yaml:"services"`
	Networks map[string]struct {
		Name     string            `yaml:"name"`
		Driver   string            `yaml:"driver"`
		Internal bool              `yaml:"internal"`
		Labels   map[string]string `yaml:"labels"`
	} `yaml:"networks"`
	Volumes any `yaml:"volumes"`
}

// interpolate does what Compose does with ${VAR}, ${VAR:-default} and
// ${VAR:?message}.
func interpolate(text string, env map[string]string) (string, error) {
	var missing error
	re := regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)(?:(:-|:\?)([^}]*))?\}`)
	out := re.ReplaceAllStringFunc(text, func(m string) string {
		g := re.FindStringSubmatch(m)
		if v := env[g[1]]; v != "" {
			return v
		}
		switch g[2] {
		case ":-":
			return g[3]
		case ":?":
			missing = fmt.Errorf("%s: %s", g[1], g[3])
		default:
			missing = fmt.Errorf("%s is unset", g[1])
		}
		return ""
	})
	return out, missing
}

func loadComposeFile(t *testing.T, env map[string]string) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := interpolate(string(raw), env)
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal([]byte(text), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestComposeFileMatchesUp compares docker-compose.yml with what Up creates
// for 5 servers, storage and 5 clients.
func TestComposeFileMatchesUp(t *testing.T) {
	for _, testID := range []string{"", "manual-1"} {
		env := map[string]string{"FENCECHECK_IMAGE": "fencecheck/node:0123456789ab", "FENCECHECK_TEST_ID": testID}
		f := loadComposeFile(t, env)
		if testID == "" {
			testID = "compose" // the file's default
		}
		spec := Spec{TestID: testID, Image: env["FENCECHECK_IMAGE"], Servers: 5, Storage: true, Clients: 5}
		want := ContainerConfigs(spec)
		netName := NetworkName(testID)
		netOpts := NetworkOptions(testID)

		if f.Name != netName {
			t.Errorf("project name %q, want %q", f.Name, netName)
		}
		if len(f.Networks) != 1 {
			t.Fatalf("networks: %v", f.Networks)
		}
		var netKey string
		for k, n := range f.Networks {
			netKey = k
			if n.Name != netName || n.Driver != netOpts.Driver || n.Internal != netOpts.Internal || !reflect.DeepEqual(n.Labels, netOpts.Labels) {
				t.Errorf("network %s = %+v, want name %s and %+v", k, n, netName, netOpts)
			}
		}
		if f.Volumes != nil {
			t.Errorf("the file declares volumes: %v", f.Volumes)
		}

		var got []string
		for name := range f.Services {
			got = append(got, name)
		}
		sort.Strings(got)
		var names []string
		for _, c := range want {
			names = append(names, c.Node)
		}
		sort.Strings(names)
		if !reflect.DeepEqual(got, names) {
			t.Fatalf("services %v, want %v", got, names)
		}
		for _, c := range want {
			s := f.Services[c.Node]
			h := c.HostConfig
			if s.Image != c.Config.Image || s.ContainerName != c.Name || s.Hostname != c.Config.Hostname {
				t.Errorf("%s: image %q name %q hostname %q; want %q %q %q", c.Node, s.Image, s.ContainerName, s.Hostname,
					c.Config.Image, c.Name, c.Config.Hostname)
			}
			if !reflect.DeepEqual(s.Labels, c.Config.Labels) {
				t.Errorf("%s: labels %v, want %v", c.Node, s.Labels, c.Config.Labels)
			}
			if !reflect.DeepEqual(s.CapAdd, []string(h.CapAdd)) || s.Privileged != h.Privileged || s.Init != (h.Init != nil && *h.Init) {
				t.Errorf("%s: cap_add %v privileged %v init %v; want %v %v %v", c.Node, s.CapAdd, s.Privileged, s.Init,
					h.CapAdd, h.Privileged, *h.Init)
			}
			// Compose makes the service name a DNS alias on every network of the
			// service, which is what Up's alias does.
			if !reflect.DeepEqual(s.Networks, []string{netKey}) || string(h.NetworkMode) != netName ||
				!reflect.DeepEqual(c.Networking.EndpointsConfig[netName].Aliases, []string{c.Node}) {
				t.Errorf("%s: networks %v", c.Node, s.Networks)
			}
			if s.Command != nil || s.Entrypoint != nil || c.Config.Cmd != nil || s.Volumes != nil || s.Ports != nil {
				t.Errorf("%s: command %v entrypoint %v volumes %v ports %v", c.Node, s.Command, s.Entrypoint, s.Volumes, s.Ports)
			}
			if s.PullPolicy != "never" {
				t.Errorf("%s: pull_policy %q, want never", c.Node, s.PullPolicy)
			}
		}
	}
}

func TestComposeFileNeedsImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := interpolate(string(raw), nil); err == nil || !strings.Contains(err.Error(), "FENCECHECK_IMAGE") {
		t.Errorf("without FENCECHECK_IMAGE: %v", err)
	}
}
