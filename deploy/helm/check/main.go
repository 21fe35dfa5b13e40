// Command check validates rendered Kubernetes manifests offline, against
// the Kubernetes API types themselves and the schemas of custom resource
// definitions:
//
//	go run . [-crd FILE]... MANIFEST...
//
// Each document of a built-in kind is decoded strictly with client-go's
// scheme, so an unknown or duplicated field, a value of the wrong type or
// a quantity that does not parse fails; a custom resource is checked with
// the API server's own validation of its CRD's OpenAPI schema, and its
// fields the schema does not know fail too. A kind known to neither
// fails. It needs no cluster and no network.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// crdSchema is one served version of a custom resource.
type crdSchema struct {
	validator  validation.SchemaValidator
	structural *structuralschema.Structural
}

func main() {
	var crds stringList
	flag.Var(&crds, "crd", "a CustomResourceDefinition file whose kinds may appear (repeat)")
	flag.Parse()
	schemas := map[schema.GroupVersionKind]crdSchema{}
	for _, f := range crds {
		if err := loadCRD(f, schemas); err != nil {
			fmt.Fprintln(os.Stderr, "check:", err)
			os.Exit(2)
		}
	}
	var errs []error
	docs := 0
	for _, f := range flag.Args() {
		n, err := checkFile(f, schemas)
		docs += n
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if docs == 0 {
		fmt.Fprintln(os.Stderr, "check: no manifest checked")
		os.Exit(1)
	}
	fmt.Printf("%d manifests valid\n", docs)
}

func loadCRD(path string, out map[schema.GroupVersionKind]crdSchema) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextv1.CustomResourceDefinition
	if err := sigsyaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiext.JSONSchemaProps
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		val, _, err := validation.NewSchemaValidator(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		st, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return fmt.Errorf("%s %s: %w", path, v.Name, err)
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		out[gvk] = crdSchema{validator: val, structural: st}
	}
	return nil
}

func checkFile(path string, schemas map[schema.GroupVersionKind]crdSchema) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	rd := utilyaml.NewYAMLReader(bufio.NewReader(f))
	strict := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var errs []error
	n := 0
	for {
		doc, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		n++
		if err := checkDoc(doc, strict, schemas); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
	}
	return n, errors.Join(errs...)
}

func checkDoc(doc []byte, strict runtime.Decoder, schemas map[schema.GroupVersionKind]crdSchema) error {
	js, err := utilyaml.ToJSON(doc)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := u.UnmarshalJSON(js); err != nil {
		return err
	}
	gvk := u.GroupVersionKind()
	name := fmt.Sprintf("%s %s", gvk.Kind, u.GetName())
	if u.GetName() == "" {
		return fmt.Errorf("%s: no metadata.name", gvk.Kind)
	}
	if scheme.Scheme.Recognizes(gvk) {
		if _, _, err := strict.Decode(doc, nil, nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	s, ok := schemas[gvk]
	if !ok {
		return fmt.Errorf("%s: no schema for %s (give its CRD with -crd)", name, gvk)
	}
	var errs []error
	for _, e := range s.validator.Validate(u.Object).Errors {
		errs = append(errs, e)
	}
	obj := u.DeepCopy().Object
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	for _, p := range pruning.PruneWithOptions(obj, s.structural, true, opts) {
		errs = append(errs, fmt.Errorf("unknown field %q", p))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// stripComments drops the comment lines (helm template's "# Source:").
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}
