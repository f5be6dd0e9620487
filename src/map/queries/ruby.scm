; pai's addition to tree-sitter-ruby's own tags query, placed BEFORE it (on the same name the
; first pattern wins): a constant assigned is a definition, not one more reference.

(assignment left: (constant) @name) @definition.constant
