// Package jsonschema is a processor plugin, "json_schema", that passes on
// the records whose value is JSON valid against a JSON Schema and sends
// the others to the processor's dead-letter topic with the reason. It
// implements the validation keywords most schemas use (draft 2020-12
// names): type, enum, const, properties, required, additionalProperties,
// items, minItems, maxItems, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, minLength, maxLength and pattern. A schema using any
// other keyword is refused at deploy, never silently ignored.
//
//	stages:
//	  - plugin: json_schema
//	    config:
//	      schema: {type: object, required: [id], properties: {id: {type: integer}}}
package jsonschema
