"""Model servers. The only package that imports litellm, and only lazily."""
