"""The REST API's base, shared by capacity's and inventory's endpoints: the view class, who the
caller is, strict parsers, OpenAPI error schemas and the one exception handler."""
