"""``python -m neuron_migrate`` is the ``neuron-migrate`` command."""

from neuron_migrate.cli import main

if __name__ == "__main__":
    main()
