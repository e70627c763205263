from spack_repo.builtin.build_systems.python import PythonPackage

from spack.package import *


class PyTensorflowonspark(PythonPackage):
    """TensorFlowOnSpark: TensorFlow programs on Spark clusters (Yahoo)."""

    homepage = "https://github.com/yahoo/TensorFlowOnSpark"
    license("Apache-2.0")

    # The wheels: 2.2.5's sdist no longer builds its metadata with current setuptools.
    version(
        "2.2.5",
        sha256="4f7381dbed64db45fa0f58b58fc18ef9147f5af4af4d459a4942644718ac6970",
        url="https://files.pythonhosted.org/packages/41/a9/a8f7ae7449c5e85193cc1562663bd28bfdd44afc188e1a5aeea5a3104191/tensorflowonspark-2.2.5-py2.py3-none-any.whl",
        expand=False,
    )
    # The 1.0 series the DLoBD paper ran (its last release).
    version(
        "1.0.8",
        sha256="6d0ba64cd942972d4deeb3b86cba81ee468d503a754b962655a15f1d90427b9e",
        url="https://files.pythonhosted.org/packages/51/36/e534014b707208de707e74207df0201ef5c4ef97538bb1a60a3e0b7a4068/tensorflowonspark-1.0.8-py2.py3-none-any.whl",
        expand=False,
    )

    depends_on("python@3.7:", type=("build", "run"), when="@2:")
    depends_on("py-pip", type="build")
    # TensorFlow itself is the caller's choice (py-tensorflow, or a site's); TFoS imports it.
