import hashlib
import os
import urllib.request

from spack_repo.builtin.build_systems.generic import Package

from spack.package import *

DOWNLOAD_PAGE = "http://hibd.cse.ohio-state.edu/ (register, then download RDMA for Apache Spark)"


def user_tarball(version, dest_dir):
    """Copy the tarball the user names into dest_dir after checking its sha256; returns its path.

    DLOBD_RDMA_SPARK_URL: a file:// URL, a plain path, or an http(s) URL (a site mirror);
    DLOBD_RDMA_SPARK_SHA256: the sha256 of the file the user downloaded from OSU.
    """
    url = os.environ.get("DLOBD_RDMA_SPARK_URL", "")
    if not url:
        raise InstallError(
            f"rdma-spark@{version}: no tarball given. OSU gives it after registration: download "
            f"it from {DOWNLOAD_PAGE}, then set DLOBD_RDMA_SPARK_URL=file:///path/to/the/tarball "
            "(or a URL on your mirror) and DLOBD_RDMA_SPARK_SHA256=<its sha256>"
        )
    want = os.environ.get("DLOBD_RDMA_SPARK_SHA256", "").strip().lower()
    if not want:
        raise InstallError(f"rdma-spark@{version}: DLOBD_RDMA_SPARK_SHA256 is not set for {url}")
    path = url[len("file://") :] if url.startswith("file://") else url
    dest = os.path.join(dest_dir, os.path.basename(path))
    if "://" in path:
        urllib.request.urlretrieve(path, dest)
    elif not os.path.isfile(path):
        raise InstallError(
            f"rdma-spark@{version}: {path} (DLOBD_RDMA_SPARK_URL) does not exist; "
            f"download it from {DOWNLOAD_PAGE}"
        )
    else:
        copy(path, dest)
    digest = hashlib.sha256()
    with open(dest, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != want:
        os.remove(dest)
        raise InstallError(
            f"rdma-spark@{version}: {url} has sha256 {digest.hexdigest()}, "
            f"DLOBD_RDMA_SPARK_SHA256 says {want}"
        )
    return dest


class RdmaSpark(Package):
    """RDMA for Apache Spark (OSU HiBD): a binary Spark with JNI verbs libraries, switched on
    with spark.ib.enabled / spark.roce.enabled.

    OSU gives the tarball only after registration, so this recipe has no public URL and no
    checksum of its own: the user names the tarball they downloaded and its sha256 (see
    user_tarball), and the install checks it.
    """

    homepage = "http://hibd.cse.ohio-state.edu/"

    # Nothing for Spack to fetch: the install takes the user's tarball.
    has_code = False
    # 0.9.5 is based on Spark 2.1.0 (the BigDL runs of the DLoBD paper). No checksum can be found
    # from here; the user's own is checked at install time.
    version("0.9.5")

    depends_on("java@8", type="run")
    depends_on("rdma-core", type="run")

    def install(self, spec, prefix):
        tarball = user_tarball(spec.version, self.stage.path)
        tar = which("tar", required=True)
        tar("-xzf", tarball, "-C", prefix, "--strip-components=1")
