"""A stand-in for the part of transformers that attnviz.serve() uses (transformers is not packaged
on the machines the tests run on): AttentionInterface, as transformers' utils/generic.py and
modeling_utils.py define it. The registry maps attn_implementation names to attention functions;
a modeling file looks its function up by the config's name on every call.
On a machine with transformers (tests/serve/test_serve_transformers.py) the real one is used."""


class AttentionInterface:
    _global_mapping = {"eager": None}

    def __init__(self):
        self._local_mapping = {}

    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]

    @classmethod
    def register(cls, key, value):
        cls._global_mapping[key] = value


ALL_ATTENTION_FUNCTIONS = AttentionInterface()
