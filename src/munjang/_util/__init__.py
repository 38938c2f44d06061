"""Small utilities every layer may use, none of them public: cache paths, atomic writes, usable cores,
optional extras, the device default, bundled texts, JSON files, and the lazy-name hook of the public
packages."""
