; pai's additions to tree-sitter-python's own tags query, placed BEFORE it (on the same name
; the first pattern wins): functions directly in a class body are methods (the grammar's query
; calls every def a function), and base classes and annotated types are references (it only
; has calls).

(class_definition
  body: (block
    (function_definition name: (identifier) @name) @definition.method))
(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition name: (identifier) @name) @definition.method)))

(class_definition
  superclasses: (argument_list
    [(identifier) @name (attribute attribute: (identifier) @name)])) @reference.class
(type (identifier) @name) @reference.type
(type (generic_type (identifier) @name)) @reference.type
