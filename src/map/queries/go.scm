; pai's additions to tree-sitter-go's own tags query, placed BEFORE it (on the same name the
; first pattern wins): struct and interface types get their own kinds (the grammar's query
; calls every type_spec a "type"), and package-level constants and interface methods are
; definitions (its const pattern carries no definition capture).

(type_spec
  name: (type_identifier) @name
  type: (struct_type)) @definition.struct
(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface
(source_file
  (const_declaration
    (const_spec name: (identifier) @name) @definition.constant))
(method_elem name: (field_identifier) @name) @definition.method
