package client

//go:generate go tool oapi-codegen -config ../api/oapi-codegen-client.yaml ../api/openapi.yaml
