// Load (and initialise) BigDL classes from the classpath; print where each came from.
// Run as a single-file program: java -cp <BigDL jars>:<Spark jars> BigdlClassCheck.java <class>...
public class BigdlClassCheck {
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Class<?> cls = Class.forName(name, true, BigdlClassCheck.class.getClassLoader());
            System.out.println(cls.getName() + " from " + cls.getProtectionDomain().getCodeSource().getLocation());
        }
    }
}
