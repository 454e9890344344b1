"""A needle prompt of a user's own for ``phasebench probe`` (``{{shift}}`` moves the needle,
``{{balance}}`` keeps the length), shared by the probe's tests and the probe through a server."""

NIAH_PROBE = (
    "Read the notes below, then answer the question.\n"
    "The weather report said the harbour stayed calm all week.\n"
    "{{shift}}The special magic number for velmorax is 48213.\n"
    "The ferry left on time and the market opened at noon.\n"
    "{{balance}}{{question}}Question: what is the special magic number for velmorax?\n"
    "Answer:"
)
