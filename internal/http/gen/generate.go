// Package gen holds the Go code generated from footprint's public contract,
// api/openapi.yaml: the request and response models, the strict server
// interface the HTTP handlers implement, the chi routing around it and the
// embedded spec used for request validation and for serving /openapi.yaml.
//
// Nothing in gen.go is edited by hand. Change the spec, then run
//
//	go generate ./internal/http/gen/
//
// and commit both; regenerating must leave the tree unchanged.
package gen

//go:generate go tool oapi-codegen -config ../../../api/oapi-codegen.yaml ../../../api/openapi.yaml
